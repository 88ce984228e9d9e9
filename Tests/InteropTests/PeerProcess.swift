import Foundation

/// Runs Tests/Peers/aiortc_peer.py and talks to it in JSON lines.
final class AiortcPeer: @unchecked Sendable {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    private let stdoutLines = LockedBuffer()
    private let stderrBuffer = LockedBuffer()

    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/aiortc_peer.py").path
    }

    init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", AiortcPeer.script] + arguments
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
        try process.run()
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
        throw PeerError(message: "no \(type) from aiortc within \(seconds) s; stderr: \(stderr.suffix(2_000))")
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
