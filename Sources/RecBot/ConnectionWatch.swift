import Logging
import NIOConcurrencyHelpers
import NIOCore
import SoraSignaling
import SoraSignalingCore
import WireCoding

/// Drives `LivenessWatch` for one connection: every half second it samples ICE consent, the
/// last frame and the WebSocket (pinged every 2 s), probes the signaling server while
/// something is quiet, and acts on the verdict: records the stall, ends it when the path comes
/// back by itself, or ends the connection (a rejoin follows) when the server answers but the
/// connection does not.
struct ConnectionWatch {
    let clock: any TimeSource
    let logger: Logger
    let interruptions: InterruptionLog
    let inbox: SessionInbox

    static let sampleNanoseconds: UInt64 = 500_000_000
    static let samplesPerPing = 4

    func run(path: MediaPath, connection: SignalingConnection, loop: EventLoop) async {
        var watch = LivenessWatch()
        var heard = (count: connection.framesHeard, at: clock.now())
        let answered = NIOLockedValueBox(false)
        var probe: Task<Void, Never>?
        defer { probe?.cancel() }
        let target = ProbeTarget(url: connection.url)
        var sample = 0
        while !Task.isCancelled {
            try? await clock.sleep(nanoseconds: Int64(Self.sampleNanoseconds))
            let now = clock.now()
            let webSocketOpen = !connection.isClosed
            if webSocketOpen {
                if sample % Self.samplesPerPing == 0 { connection.sendPing() }
                let count = connection.framesHeard
                if count != heard.count { heard = (count, now) }
            }
            sample += 1
            if answered.withLockedValue({ flag in defer { flag = false }; return flag }) { watch.probeAnswered(now: now) }
            let signals = LivenessWatch.Signals(consentAt: await path.consentGrantedAt(), mediaAt: path.times.withLockedValue { $0.lastFrame },
                                                webSocketAt: webSocketOpen ? heard.at : nil)
            for action in watch.observe(signals, now: now) {
                guard act(on: action, path: path, now: now) else { return }
            }
            if watch.wantsProbes, probe == nil, let target {
                probe = Task {
                    let reached = await RejoinWait.probeUntilAnswered([target], intervalNanoseconds: RejoinWait.probeIntervalNanoseconds, clock: clock) {
                        await $0.answers(on: loop)
                    }
                    if reached { answered.withLockedValue { $0 = true } }
                }
            } else if !watch.wantsProbes, let running = probe {
                running.cancel()
                probe = nil
            }
        }
    }

    /// False when the connection is to end.
    private func act(on action: LivenessWatch.Action, path: MediaPath, now: MonotonicTime) -> Bool {
        switch action {
        case .stalled(let cause):
            logger.warning("the connection went quiet; it is kept while the network may come back, and the signaling server is probed",
                           metadata: ["cause": "\(cause)"])
            interruptions.stalled(cause: "connection quiet: \(cause)", lastMediaAt: path.times.withLockedValue { $0.lastFrame }, now: now,
                                  wallClock: clock.wallClockMilliseconds())
        case .resumed:
            interruptions.resumed(now: now, wallClock: clock.wallClockMilliseconds())
        case .end(let reason):
            logger.warning("the connection is lost; joining again", metadata: ["reason": "\(reason)"])
            inbox.post(control: .transportFailed(reason))
            return false
        }
        return true
    }
}
