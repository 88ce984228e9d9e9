import Foundation
import Glibc

/// One job's `recbot join`, as a child process: a crash takes that recording, not the
/// service. Started with the service's own executable and environment (its RECBOT_* settings
/// are every job's defaults), minus the service's own secrets.
public final class ChildJoin: @unchecked Sendable {
    private let process: Process
    public let jobID: String
    /// The exit status, once there is one (a signal's is 128 + its number, as a shell
    /// reports it); any number of tasks may wait for it.
    private let exit = ExitStatusBox()

    public var pid: Int32 { process.processIdentifier }
    private let errors = ErrorLines()

    /// The last `recbot: …` line the child wrote on standard error: why it ended when it
    /// ended before its session did (its own session row then says nothing of it).
    public var lastError: String? { errors.last }

    /// Starts `executable join <arguments>`.
    public init(jobID: String, executable: String, arguments: [String], environment: [String: String]) throws {
        self.jobID = jobID
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["join"] + arguments
        process.environment = environment
        // The child's standard error goes on to the service's (the journal), read through a
        // pipe so the service also learns the child's last error line.
        let pipe = Pipe()
        process.standardError = pipe
        let errors = self.errors
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            FileHandle.standardError.write(data)
            errors.append(data)
        }
        let exit = self.exit
        process.terminationHandler = { finished in
            exit.set(finished.terminationReason == .uncaughtSignal ? 128 + finished.terminationStatus : finished.terminationStatus)
        }
        try process.run()
    }

    /// Asks the recording to end as a signal does: files finished, catalog row ended.
    public func stop() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGTERM) }
    }

    /// Ends it at once (a lease that was lost: another worker records now).
    public func kill() {
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
    }

    /// Waits for the child to end and returns its exit status.
    public func status() async -> Int32 {
        await exit.value()
    }

    /// The service's environment for a child: its secrets removed (the child needs none of
    /// the service's credentials: it never answers webhooks or API calls).
    public static func environment(from service: [String: String]) -> [String: String] {
        service.filter { !$0.key.hasPrefix("RECBOT_SERVE_") }
    }
}

/// The last line starting with `recbot: ` of a child's standard error, from its chunks.
final class ErrorLines: @unchecked Sendable {
    private let lock = NSLock()
    private var partial = Data()
    private var lastLine: String?

    var last: String? { lock.withLock { lastLine } }

    func append(_ data: Data) {
        lock.withLock {
            partial.append(data)
            while let newline = partial.firstIndex(of: 0x0A) {
                let line = String(decoding: partial[partial.startIndex..<newline], as: UTF8.self)
                partial.removeSubrange(partial.startIndex...newline)
                if line.hasPrefix("recbot: ") { lastLine = String(line.dropFirst(8).prefix(1_000)) }
            }
            // A line with no end in sight is not an error line recbot writes: keep memory bounded.
            if partial.count > 4_096 { partial.removeAll() }
        }
    }
}

/// A value set once and awaited by any number of tasks (an AsyncStream allows one).
final class ExitStatusBox: @unchecked Sendable {
    private let lock = NSLock()
    private var status: Int32?
    private var waiting: [CheckedContinuation<Int32, Never>] = []

    func set(_ value: Int32) {
        let resumed = lock.withLock { () -> [CheckedContinuation<Int32, Never>] in
            guard status == nil else { return [] }
            status = value
            defer { waiting = [] }
            return waiting
        }
        for continuation in resumed { continuation.resume(returning: value) }
    }

    func value() async -> Int32 {
        await withCheckedContinuation { continuation in
            let ready = lock.withLock { () -> Int32? in
                if let status { return status }
                waiting.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
