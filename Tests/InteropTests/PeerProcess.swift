import Foundation
import TestSupport

/// Runs one of the Python peers in Tests/Peers and talks to it in JSON lines.
final class PeerProcess: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let stdoutLines = LockedBuffer()
    private let stderrBuffer = LockedBuffer()

    let name: String

    static func script(_ file: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers").appendingPathComponent(file).path
    }

    /// aiortc: the PyPI packages live in whatever `python3` is first on PATH.
    static func aiortc(arguments: [String]) throws -> PeerProcess {
        try PeerProcess(name: "aiortc", command: ["/usr/bin/env", "python3", script("aiortc_peer.py")] + arguments)
    }

    /// GStreamer webrtcbin: its Python bindings are Debian packages, so Debian's own interpreter.
    static func gstreamer(arguments: [String]) throws -> PeerProcess {
        try PeerProcess(name: "GStreamer", command: ["/usr/bin/python3", script("gstreamer_peer.py")] + arguments)
    }

    init(name: String, command: [String]) throws {
        self.name = name
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        // Plain threads read the pipes: FileHandle has no async line API on Linux.
        for (handle, buffer) in [(output.fileHandleForReading, stdoutLines), (errors.fileHandleForReading, stderrBuffer)] {
            Thread.detachNewThread {
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    buffer.append(chunk)
                }
            }
        }
        try IndependentPeer.run(process)
    }

    var stderr: String { stderrBuffer.text }

    /// The next JSON message of `type`, within `seconds`.
    func next(type: String, within seconds: Double) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            while let line = stdoutLines.takeLine() {
                if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["type"] as? String == type {
                    return object
                }
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        throw PeerError(message: "no \(type) from \(name) within \(seconds) s; stderr: \(stderr.suffix(2_000))")
    }

    func send(_ object: [String: Any]) throws {
        var data = try JSONSerialization.data(withJSONObject: object)
        data.append(0x0A)
        input.fileHandleForWriting.write(data)
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    struct PeerError: Error, CustomStringConvertible { var message: String; var description: String { message } }
}

private final class LockedBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) { lock.lock(); data.append(chunk); lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return String(decoding: data, as: UTF8.self) }

    func takeLine() -> String? {
        lock.lock(); defer { lock.unlock() }
        guard let newline = data.firstIndex(of: 0x0A) else { return nil }
        let line = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
        data.removeSubrange(data.startIndex...newline)
        return line
    }
}

/// A data-channel message as the Python peers write it in JSON: `{"text": ...}` or `{"hex": ...}`.
struct PeerMessage: Equatable, CustomStringConvertible {
    var isBinary: Bool
    var data: [UInt8]

    init(isBinary: Bool, data: [UInt8]) {
        self.isBinary = isBinary
        self.data = data
    }

    init?(json entry: Any) {
        guard let entry = entry as? [String: String] else { return nil }
        if let text = entry["text"] {
            self.init(isBinary: false, data: Array(text.utf8))
        } else if let hex = entry["hex"], hex.count % 2 == 0 {
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            self.init(isBinary: true, data: bytes)
        } else {
            return nil
        }
    }

    /// Messages per label from a report field such as `"sent"` or `"received"`.
    static func byLabel(_ field: Any?) -> [String: [PeerMessage]]? {
        guard let field = field as? [String: [Any]] else { return nil }
        var result: [String: [PeerMessage]] = [:]
        for (label, entries) in field {
            let messages = entries.compactMap(PeerMessage.init(json:))
            guard messages.count == entries.count else { return nil }
            result[label] = messages
        }
        return result
    }

    var description: String {
        isBinary ? "binary(\(data.count) bytes)" : "text(\(data.count) bytes: \(String(decoding: data.prefix(24), as: UTF8.self)))"
    }
}
