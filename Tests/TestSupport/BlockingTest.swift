import Foundation

/// Runs a test body that blocks — a child process waited for, a server started, a real-time
/// wait — on threads kept for such bodies instead of Swift's cooperative pool. That pool has one
/// thread per core and Swift Testing runs synchronous tests on it, so on a 2-core machine two
/// `recbot join` scenarios waiting out their `--duration` held every thread and the suite ran
/// two tests at a time, most of them idle. Here `blockingWidth` bodies block at once (their
/// tasks queue, they hold no thread) while quick tests keep the pool. The body stays in the
/// test's task, so its expectations are the test's own.
public func blocking<T>(_ body: () throws -> T) async rethrows -> T {
    try await withTaskExecutorPreference(DedicatedExecutor.blockingBodies) { try body() }
}

extension DedicatedExecutor {
    /// How many blocking bodies run at once: `RECBOT_TEST_BLOCKING_WIDTH`, else 3. Most of a
    /// scenario's time is waiting on real time, but its test server and peers encode media: on
    /// two cores, four at once let them fall behind now and then (a relay over TCP kept 82 % of
    /// the frames, four encoders bunched their timestamps), six often.
    public static let blockingWidth = ProcessInfo.processInfo.environment["RECBOT_TEST_BLOCKING_WIDTH"].flatMap(Int.init).map { max(1, $0) } ?? 3

    static let blockingBodies = DedicatedExecutor(threads: blockingWidth)
}
