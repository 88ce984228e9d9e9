import Foundation
import Glibc
import TestSupport

/// Tests/Peers/s3_fault_proxy.py in front of a SeaweedFS server: requests pass unchanged, and
/// CompleteMultipartUpload answers are lost (and the retry told NoSuchUpload, if asked), replaced
/// by a 200 carrying an Error, or padded with whitespace, as many times as asked. `injected` lists the faults it actually made.
public final class S3FaultProxy: @unchecked Sendable {
    public enum Fault: String, Sendable {
        case loseCompleteReply = "lose-complete-reply"
        case forgetCompletedUpload = "forget-completed-upload"
        case error200Complete = "error-200-complete"
        case keepaliveComplete = "keepalive-complete"
    }

    public let endpoint: String
    private let process = Process()
    private let eventsPath: String

    public init(upstream: String, faults: [Fault: Int]) throws {
        eventsPath = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-s3-faults-\(UUID().uuidString.prefix(8)).jsonl").path
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/s3_fault_proxy.py").path
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--upstream", upstream, "--events", eventsPath]
            + faults.flatMap { ["--\($0.key.rawValue)", "\($0.value)"] }
        let output = Pipe()
        process.standardOutput = output
        // A file, not a pipe: a proxy that writes much to a pipe nobody reads would block.
        let errorsPath = eventsPath + ".stderr"
        _ = FileManager.default.createFile(atPath: errorsPath, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errorsPath)
        try process.run()
        let line = readFirstLine(output.fileHandleForReading)
        let object = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any]
        guard let endpoint = object?["endpoint"] as? String else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            let problem = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
            throw SeaweedServer.Failure(command: "s3_fault_proxy.py", output: String(decoding: line, as: UTF8.self) + problem.suffix(1_500))
        }
        self.endpoint = endpoint
    }

    deinit { stop() }

    /// The faults made so far, in order.
    public var injected: [Fault] { events.compactMap { ($0["fault"] as? String).flatMap(Fault.init(rawValue:)) } }

    /// The answer to each completion: the server's HTTP status and S3 error code, or, after a
    /// `forgetCompletedUpload` fault, the 404 NoSuchUpload the proxy made up for the retry.
    public var completions: [(status: Int, code: String?)] {
        events.compactMap { event in (event["completion"] as? Int).map { ($0, event["code"] as? String) } }
    }

    private var events: [[String: Any]] {
        let text = (try? String(contentsOfFile: eventsPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    public func stop() {
        stopProcess(process, graceSeconds: 0)
        try? FileManager.default.removeItem(atPath: eventsPath)
        try? FileManager.default.removeItem(atPath: eventsPath + ".stderr")
    }
}
