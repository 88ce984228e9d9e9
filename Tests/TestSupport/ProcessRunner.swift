import Foundation
import Synchronization

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
/// value removes a variable. `killAfterSeconds`: a child still running then is killed and a
/// line saying so ends its standard error (a hung child fails its test instead of the run).
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String?] = [:],
                       standardInput: Data? = nil, killAfterSeconds: Double? = nil) throws -> ProcessOutput {
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
    let watchdog = killAfterSeconds.map { Watchdog(process, seconds: $0) }
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    var errors = stderr.wait()
    if watchdog?.stop() == true {
        errors.append(contentsOf: Data("\ntest: killed after \(killAfterSeconds ?? 0) s, still running (hung?)\n".utf8))
    }
    return ProcessOutput(status: process.terminationStatus, stdout: stdout, stderr: errors)
}

/// Kills a child that outlives its time; `stop` says whether it had to.
private final class Watchdog {
    private final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    private let fired = Flag()
    private let item: DispatchWorkItem

    init(_ process: Process, seconds: Double) {
        let (pid, fired) = (process.processIdentifier, fired)
        item = DispatchWorkItem {
            fired.set()
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: item)
    }

    func stop() -> Bool {
        item.cancel()
        return fired.isSet
    }
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
