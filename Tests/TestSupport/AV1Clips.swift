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

/// Runs Debian's ffmpeg on its 30 fps test pattern with the given encoder options.
func encodeTestPattern(frames: Int, width: Int, height: Int, to path: String, _ encoder: [String]) throws {
    let ffmpeg = try runProcess("/usr/bin/env", ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=\(width)x\(height):rate=30",
                                                 "-frames:v", "\(frames)", "-pix_fmt", "yuv420p"] + encoder + [path])
    guard ffmpeg.status == 0 else {
        throw ExternalToolError(description: "ffmpeg \(encoder.prefix(2).joined(separator: " ")) exited \(ffmpeg.status): \(ffmpeg.stderrText)")
    }
}

/// Encodes ffmpeg's test pattern with libaom-av1 (Debian's ffmpeg) and splits it at the
/// temporal delimiters.
public func av1TemporalUnits(frames: Int, width: Int, height: Int, keyframeInterval: Int = 10) throws -> [AV1TemporalUnit] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("av1-\(UUID()).obu").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try encodeTestPattern(frames: frames, width: width, height: height, to: path,
                          ["-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8", "-g", "\(keyframeInterval)", "-f", "obu"])
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

/// Encodes ffmpeg's test pattern with libx264 (constrained baseline, an access unit
/// delimiter per picture) and returns Annex-B access units without their delimiters.
public func h264AccessUnits(frames: Int, width: Int, height: Int, keyframeInterval: Int = 10) throws -> [(data: [UInt8], isKeyframe: Bool)] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("h264-\(UUID()).h264").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try encodeTestPattern(frames: frames, width: width, height: height, to: path,
                          ["-c:v", "libx264", "-profile:v", "baseline", "-preset", "ultrafast", "-g", "\(keyframeInterval)", "-bf", "0",
                           "-x264-params", "aud=1", "-f", "h264"])
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    // Split at the 4-byte start codes libx264 writes before each access unit delimiter (type 9).
    var units: [(data: [UInt8], isKeyframe: Bool)] = []
    var index = 0
    var start: Int?
    func close(at end: Int) {
        guard let begin = start else { return }
        let unit = Array(bytes[begin..<end])
        units.append((unit, containsIDR(unit)))
    }
    while index + 4 < bytes.count {
        if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 0, bytes[index + 3] == 1, bytes[index + 4] & 0x1F == 9 {
            close(at: index)
            start = index + 6  // past the delimiter NAL (start code, header, primary_pic_type)
            index += 6
            continue
        }
        index += 1
    }
    close(at: bytes.count)
    return units
}

private func containsIDR(_ unit: [UInt8]) -> Bool {
    var index = 0
    while index + 3 < unit.count {
        if unit[index] == 0, unit[index + 1] == 0, unit[index + 2] == 1 {
            if unit[index + 3] & 0x1F == 5 { return true }
            index += 3
        } else {
            index += 1
        }
    }
    return false
}
