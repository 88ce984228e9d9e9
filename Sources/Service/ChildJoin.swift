import Foundation
import Glibc
import Logging

/// One job's `recbot join`, as a child process: a crash takes that recording, not the
/// service. Started with the service's own executable and environment (its RECBOT_* settings
/// are every job's defaults), minus the service's own secrets.
public final class ChildJoin: @unchecked Sendable {
    private let process: Process
    public let jobID: String
    /// Resumed once, with the exit status (a signal's is 128 + its number, as a shell reports it).
    private let exit: AsyncStream<Int32>
    private let exitContinuation: AsyncStream<Int32>.Continuation

    public var pid: Int32 { process.processIdentifier }

    /// Starts `executable join <arguments>`.
    public init(jobID: String, executable: String, arguments: [String], environment: [String: String]) throws {
        self.jobID = jobID
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["join"] + arguments
        process.environment = environment
        (exit, exitContinuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
        let continuation = exitContinuation
        process.terminationHandler = { finished in
            let status = finished.terminationReason == .uncaughtSignal ? 128 + finished.terminationStatus : finished.terminationStatus
            continuation.yield(status)
            continuation.finish()
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
        for await status in exit { return status }
        return process.terminationStatus
    }

    /// The service's environment for a child: its secrets removed (the child needs none of
    /// the service's credentials: it never answers webhooks or API calls).
    public static func environment(from service: [String: String]) -> [String: String] {
        service.filter { !$0.key.hasPrefix("RECBOT_SERVE_") }
    }
}
