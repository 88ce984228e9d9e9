import Foundation
import Synchronization

/// Runs a test body that blocks — a child process waited for, a server started, a real-time
/// wait — on threads kept for such bodies instead of Swift's cooperative pool. That pool has one
/// thread per core and Swift Testing runs synchronous tests on it, so on a 2-core machine two
/// `recbot join` scenarios waiting out their `--duration` held every thread and the suite ran
/// two tests at a time, most of them idle. Here `blockingWidth` bodies block at once (their
/// tasks queue, they hold no thread) while quick tests keep the pool. The body stays in the
/// test's task, so its expectations are the test's own.
///
/// With `RECBOT_TEST_BODY_TIMES=FILE`, each body's own wall time (not its wait for a thread)
/// is appended to FILE as "seconds test started-at": what to shorten or start sooner when the
/// suite grows slow (started-at: seconds since the first body of the process started).
///
/// `heavy`: the body keeps the CPU busy too (several encoders in a test server, a browser): it
/// takes three of the four places, so it runs beside one light body at most and never beside
/// another heavy one. Two at once (four browsers and Janus beside four Python encoders) starved
/// the senders themselves on two cores: the test server sent 40 frames in 9 s, in bursts, and
/// the truth it wrote was no longer a camera's.
public func blocking<T>(heavy: Bool = false, _ test: String = #function, _ body: () throws -> T) async rethrows -> T {
    let weight = min(heavy ? 3 : 1, DedicatedExecutor.blockingWidth)
    await BlockingPlaces.shared.take(weight)
    defer { BlockingPlaces.shared.give(weight) }
    return try await withTaskExecutorPreference(DedicatedExecutor.blockingBodies) {
        let started = BodyTimes.start()
        defer { BodyTimes.record(test, started: started) }
        return try body()
    }
}

/// The places blocking bodies take, first come first served (a heavy body waiting is not
/// overtaken by light ones, so it cannot starve).
private final class BlockingPlaces: Sendable {
    static let shared = BlockingPlaces(count: DedicatedExecutor.blockingWidth)

    private struct State {
        var free: Int
        var waiting: [(weight: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    init(count: Int) { state = Mutex(State(free: count)) }

    func take(_ weight: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                guard state.waiting.isEmpty, state.free >= weight else {
                    state.waiting.append((weight, continuation))
                    return false
                }
                state.free -= weight
                return true
            }
            if now { continuation.resume() }
        }
    }

    func give(_ weight: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.free += weight
            var ready: [CheckedContinuation<Void, Never>] = []
            while let first = state.waiting.first, first.weight <= state.free {
                state.free -= first.weight
                ready.append(first.continuation)
                state.waiting.removeFirst()
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}

private enum BodyTimes {
    static let path = ProcessInfo.processInfo.environment["RECBOT_TEST_BODY_TIMES"]

    /// One append per line (O_APPEND), so bodies ending at once do not interleave.
    static let origin = ContinuousClock.now

    static func start() -> ContinuousClock.Instant {
        _ = origin  // the first body's start is the origin
        return ContinuousClock.now
    }

    static func record(_ test: String, started: ContinuousClock.Instant) {
        guard let path else { return }
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let line = Array(String(format: "%.1f %@ %.1f\n", seconds(ContinuousClock.now - started), test, seconds(started - origin)).utf8)
        _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension DedicatedExecutor {
    /// How many places blocking bodies share: `RECBOT_TEST_BLOCKING_WIDTH`, else 4; a heavy
    /// body takes three. Most of a scenario's time is waiting on real time, but its test server
    /// and peers encode media: on two cores, four bodies of any kind at once let them fall
    /// behind now and then (a relay over TCP kept 82 % of the frames), six often.
    public static let blockingWidth = ProcessInfo.processInfo.environment["RECBOT_TEST_BLOCKING_WIDTH"].flatMap(Int.init).map { max(1, $0) } ?? 4

    static let blockingBodies = DedicatedExecutor(threads: blockingWidth)
}
