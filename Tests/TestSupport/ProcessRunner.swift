import Foundation

/// What a finished child process left: its exit status and everything it wrote.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// Runs a command to its end and returns what it wrote. Standard error is read on its own
/// thread while standard output is read here: a pipe holds 64 KiB, so reading one to its end
/// before the other deadlocks as soon as the child fills the one not being read (a chatty
/// `recbot` log does). `environment` is added to this process's environment, and a `nil`
/// value removes a variable.
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String?] = [:],
                       standardInput: Data? = nil) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if !environment.isEmpty {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
    }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let input = standardInput.map { _ in Pipe() }
    process.standardInput = input ?? FileHandle.nullDevice
    try process.run()
    let stderr = ConcurrentRead(err.fileHandleForReading)
    if let input, let standardInput {
        // Written on its own thread too, for the same reason: the child may write before it reads.
        let writer = input.fileHandleForWriting
        Thread {
            try? writer.write(contentsOf: standardInput)
            try? writer.close()
        }.start()
    }
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessOutput(status: process.terminationStatus, stdout: stdout, stderr: stderr.wait())
}

/// The first line a child writes (a server saying where it listens), without the newline;
/// what came before the end of the stream if it never wrote one.
public func readFirstLine(_ handle: FileHandle) -> Data {
    var line = Data()
    while !line.contains(0x0A) {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        line.append(chunk)
    }
    return line.prefix { $0 != 0x0A }
}

/// A pipe read to its end on a thread of its own (not a Dispatch worker: many tests blocked in
/// reads at once must not exhaust the shared pool).
private final class ConcurrentRead: @unchecked Sendable {
    private var data = Data()  // written once by the reader, read after `done` is signalled
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread {
            self.data = handle.readDataToEndOfFile()
            self.done.signal()
        }.start()
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}

/// Stops a long-running child: SIGTERM, up to `graceSeconds` to leave, then SIGKILL. A child
/// started from a thread that blocks SIGTERM never sees it, and a throwaway server's state is
/// not worth waiting for.
public func stopProcess(_ process: Process, graceSeconds: Double = 3) {
    if process.isRunning && graceSeconds > 0 { process.terminate() }
    let deadline = Date().addingTimeInterval(graceSeconds)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}
