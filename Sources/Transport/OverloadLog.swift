import Logging
import WireCoding

/// One line when the receive backlog starts dropping media and one when it has stopped (no
/// drop for `quietMilliseconds`), with what the episode cost: an overloaded host says so once,
/// not once per packet.
struct OverloadLog {
    static let quietMilliseconds: Int64 = 5_000

    enum Report {
        case started(peakBytes: Int)
        case ended(mediaDropped: Int, controlDropped: Int, milliseconds: Int64)

        func log(to logger: Logger) {
            switch self {
            case .started(let peak):
                logger.warning("receiving faster than the recording keeps up: the receive backlog is full and new media is dropped (ICE, DTLS, data channels and RTCP are kept); NACK and keyframe requests recover what the feedback budget allows",
                               metadata: ["backlog_bytes": "\(peak)"])
            case .ended(let media, let control, let milliseconds):
                logger.notice("the receive backlog is keeping up again",
                              metadata: ["media_dropped": "\(media)", "control_dropped": "\(control)", "seconds": "\(Double(milliseconds) / 1000)"])
            }
        }
    }

    private var seen = ReceiveBacklog.Counters()
    private var episode: (began: MonotonicTime, lastDrop: MonotonicTime, before: ReceiveBacklog.Counters)?

    mutating func observe(_ counters: ReceiveBacklog.Counters, now: MonotonicTime) -> Report? {
        let dropped = counters.mediaDropped + counters.controlDropped > seen.mediaDropped + seen.controlDropped
        defer { seen = counters }
        if let current = episode {
            if dropped {
                episode?.lastDrop = now
                return nil
            }
            guard now.milliseconds(since: current.lastDrop) >= Self.quietMilliseconds else { return nil }
            episode = nil
            return .ended(mediaDropped: counters.mediaDropped - current.before.mediaDropped,
                          controlDropped: counters.controlDropped - current.before.controlDropped,
                          milliseconds: current.lastDrop.milliseconds(since: current.began))
        }
        guard dropped else { return nil }
        episode = (now, now, seen)
        return .started(peakBytes: counters.peakBytes)
    }
}
