import Foundation

/// A real HTTP receiver for webhooks (Tests/Peers/webhook_receiver.py) that logs every request,
/// with the behaviours its flags ask for (down for a while, slow, failing, checking signatures).
public struct WebhookReceiver {
    public let process = Process()
    public let log: String
    public let url: String

    /// `waitUntilListening`: return once it serves (not with `--down-for`, which delays that).
    public init(directory: URL, arguments: [String], waitUntilListening: Bool = false) throws {
        let port = try freeLoopbackPort()
        log = directory.appendingPathComponent("webhooks-\(port).jsonl").path
        url = "http://127.0.0.1:\(port)/hook"
        let peers = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Peers").standardized
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", peers.appendingPathComponent("webhook_receiver.py").path, "--port", String(port), "--log", log] + arguments
        let output = Pipe()
        process.standardOutput = waitUntilListening ? output : FileHandle(forWritingAtPath: "/dev/null")
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        if waitUntilListening { _ = readFirstLine(output.fileHandleForReading) }
    }

    /// The requests it logged, with their parsed bodies (`status` 200: delivered).
    public func requests() throws -> [(body: [String: Any], entry: [String: Any])] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], let body = entry["body"] as? String,
                  let object = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] else { return nil }
            return (object, entry)
        }
    }

    /// The requests it answered 200.
    public func delivered() throws -> [(body: [String: Any], entry: [String: Any])] {
        try requests().filter { $0.entry["status"] as? Int == 200 }
    }

    public func stop() { stopProcess(process, graceSeconds: 0) }
}
