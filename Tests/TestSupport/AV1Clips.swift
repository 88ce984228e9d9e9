import Bitstreams
import Foundation

/// One AV1 temporal unit as libaom wrote it (low-overhead format, sized OBUs).
public struct AV1TemporalUnit: Sendable {
    /// Each OBU with its header and size field; temporal delimiters are left out.
    public var obus: [[UInt8]]
    /// libaom repeats the sequence header on every key frame.
    public var isKeyframe: Bool { obus.contains { ($0[0] >> 3) & 0x0F == AV1OBUType.sequenceHeader.rawValue } }
    public var data: [UInt8] { obus.flatMap { $0 } }
}

public struct ExternalToolError: Error, CustomStringConvertible {
    public var description: String
}

/// Encodes ffmpeg's test pattern with libaom-av1 (Debian's ffmpeg) and splits it at the
/// temporal delimiters.
public func av1TemporalUnits(frames: Int, width: Int, height: Int, keyframeInterval: Int = 10) throws -> [AV1TemporalUnit] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("av1-\(UUID()).obu").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    let ffmpeg = Process()
    ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    ffmpeg.arguments = ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=30", "-frames:v", "\(frames)",
                        "-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8", "-g", "\(keyframeInterval)", "-pix_fmt", "yuv420p",
                        "-f", "obu", path]
    try ffmpeg.run()
    ffmpeg.waitUntilExit()
    guard ffmpeg.terminationStatus == 0 else { throw ExternalToolError(description: "ffmpeg libaom-av1 exited \(ffmpeg.terminationStatus)") }
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    var units: [AV1TemporalUnit] = []
    for obu in try AV1OBU.split(bytes[...]) {
        let start = obu.payload.lowerBound - LEB128.encode(obu.payload.count).count - obu.header.length
        if obu.header.type == AV1OBUType.temporalDelimiter.rawValue {
            units.append(AV1TemporalUnit(obus: []))
        } else if !units.isEmpty {
            units[units.count - 1].obus.append(Array(bytes[start..<obu.payload.upperBound]))
        }
    }
    return units
}
