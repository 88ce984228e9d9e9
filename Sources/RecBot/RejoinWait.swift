import Foundation
import NIOCore
import NIOPosix
import WireCoding
import Synchronization

/// The wait before the next join attempt: until the backoff's time, and, when the last
/// attempt found nothing answering (the network dark, the server restarting), until a cheap
/// TCP connect to a signaling address succeeds as well. The probes start every half second,
/// each with its own one-second timeout, so the network's return is seen within about half a
/// second: no join is tried into the dark (where its TCP handshake would hang for seconds
/// after the network came back), and none waits longer than the backoff once it is back.
enum RejoinWait {
    static let probeIntervalNanoseconds: UInt64 = 500_000_000

    /// True when it is time to join again; false when a stop came first.
    static func wait(until deadline: MonotonicTime, probing urls: [String], stopRequest: StopRequest, loop: EventLoop,
                     clock: any TimeSource) async -> Bool {
        let targets = urls.compactMap(ProbeTarget.init(url:))
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let first = FirstOutcome()
            let tasks = TaskSet()
            let state = ProbeState(needsProbe: !targets.isEmpty)
            // Whichever ends the wait, the others stop.
            let finish: @Sendable (Bool) -> Void = { value in
                guard first.claim() else { return }
                continuation.resume(returning: value)
                tasks.cancelAll()
            }
            tasks.add(Task {
                try? await clock.sleep(until: deadline)
                if !Task.isCancelled, state.deadlinePassed() { finish(true) }
            })
            tasks.add(Task {
                if await stopRequest.wait() != nil { finish(false) }
            })
            guard !targets.isEmpty else { return }
            tasks.add(Task {
                if await probeUntilAnswered(targets, intervalNanoseconds: probeIntervalNanoseconds, clock: clock,
                                            answers: { await $0.answers(on: loop) }),
                   state.reached() {
                    finish(true)
                }
            })
        }
    }

    /// Starts a probe of every target each interval (a probe may outlast the interval) until one
    /// answers: true then, false when cancelled. The probes are children of one task group and
    /// are reaped as they end; a round is skipped while `maximumRoundsInFlight` rounds' probes are
    /// still connecting, so however long the outage, and however late the probes' tasks get to
    /// run on a busy host, only a few are held.
    static func probeUntilAnswered(_ targets: [ProbeTarget], intervalNanoseconds: UInt64, clock: any TimeSource,
                                   answers: @escaping @Sendable (ProbeTarget) async -> Bool) async -> Bool {
        enum Outcome { case probe(answered: Bool), nextRound }
        return await withTaskGroup(of: Outcome.self) { group in
            var inFlight = 0
            func startRound() {
                if inFlight + targets.count <= maximumRoundsInFlight * targets.count {
                    for target in targets { group.addTask { .probe(answered: await answers(target)) } }
                    inFlight += targets.count
                }
                group.addTask {
                    try? await clock.sleep(nanoseconds: Int64(intervalNanoseconds))
                    return .nextRound
                }
            }
            startRound()
            while let outcome = await group.next() {
                if Task.isCancelled { break }
                switch outcome {
                case .probe(answered: true):
                    group.cancelAll()
                    return true
                case .probe(answered: false): inFlight -= 1
                case .nextRound: startRound()
                }
            }
            group.cancelAll()
            return false
        }
    }

    /// A probe's own timeout (1 s) spans two intervals: three rounds cover it with one to spare.
    static let maximumRoundsInFlight = 3
}

/// Whether the wait's two conditions hold: the backoff's time has come, and (when probing)
/// a signaling address answered.
private final class ProbeState: Sendable {
    private let state: Mutex<(reachable: Bool, due: Bool)>

    init(needsProbe: Bool) { state = Mutex((reachable: !needsProbe, due: false)) }

    /// The backoff's time came: true when nothing else is waited for.
    func deadlinePassed() -> Bool {
        state.withLock { state in
            state.due = true
            return state.reachable
        }
    }

    /// A probe connected: true when the backoff's time has come as well.
    func reached() -> Bool {
        state.withLock { state in
            state.reachable = true
            return state.due
        }
    }
}

/// A signaling server's host and port, for a reachability probe.
struct ProbeTarget: Sendable {
    var host: String
    var port: Int

    init?(url: String) {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else { return nil }
        let secure = components.scheme?.lowercased() == "wss"
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
    }

    /// A TCP connection opens within a second (it is closed at once, before any byte).
    func answers(on loop: EventLoop) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: loop).connectTimeout(.seconds(1)).connect(host: host, port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }
}
