import WireCoding

/// One sender's frames on their way to the recorder: a stream's first frames wait (at most
/// `maximumHold`) until the sender's SRs can place them, so a file starts with audio and video
/// already aligned instead of switching from arrival time to SR time with a step. Frames of a
/// stream that is already placed pass straight through.
struct SenderTimeline {
    private(set) var clock = SenderClock()
    private var held: [(frame: ReceivedFrame, rtp: Int64)] = []
    /// Per held stream: when its frames are released whatever the SRs say.
    private var holdUntil: [UInt32: Int64] = [:]
    private(set) var heldBytes = 0

    /// Hold no longer than this (then the stream starts on its arrival time); 0 holds nothing.
    let maximumHold: Int64

    init(maximumHold: Int64) { self.maximumHold = max(0, maximumHold) }
    /// Past this many frames held, the sender's frames are released at once.
    static let maximumHeldFrames = 512
    /// …or past this many bytes (2 s of even a 20 Mbit/s stream stays under it).
    static let maximumHeldBytes = 8 << 20

    var nextDeadline: MonotonicTime? { holdUntil.values.min().map { MonotonicTime(nanoseconds: $0) } }
    var counters: SyncCounters { clock.counters }

    mutating func addStream(ssrc: UInt32, clockRate: Int) { clock.addStream(ssrc: ssrc, clockRate: clockRate) }

    /// The stream ended: its held frames are placed (on arrival time if need be) and returned.
    mutating func removeStream(ssrc: UInt32, now: MonotonicTime, into output: inout [ReceivedFrame]) {
        if holdUntil[ssrc] != nil { release(now: now, forcing: [ssrc], into: &output) }
        clock.removeStream(ssrc: ssrc)
    }

    mutating func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrival: MonotonicTime,
                               into output: inout [ReceivedFrame]) -> Bool {
        let plausible = clock.senderReport(ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp, arrival: arrival)
        if !holdUntil.isEmpty { release(now: arrival, forcing: [], into: &output) }
        return plausible
    }

    /// Places `frame` (its `mediaTime` is set here), or holds it for its sender's SRs.
    mutating func take(_ frame: ReceivedFrame, into output: inout [ReceivedFrame]) {
        let rtp = clock.unwrap(ssrc: frame.ssrc, rtpTimestamp: frame.frame.rtpTimestamp)
        if holdUntil[frame.ssrc] == nil && (maximumHold == 0 || !clock.needsReport(ssrc: frame.ssrc)) {
            output.append(placed(frame, rtp: rtp))
            return
        }
        if holdUntil[frame.ssrc] == nil { holdUntil[frame.ssrc] = frame.completedAt.nanoseconds &+ maximumHold }
        held.append((frame, rtp))
        heldBytes += frame.frame.data.count
        clock.countHeld()
        let flood = held.count > Self.maximumHeldFrames || heldBytes > Self.maximumHeldBytes
        release(now: frame.completedAt, forcing: flood ? Set(holdUntil.keys) : [], into: &output)
    }

    /// Releases every held frame (the receiver is over its memory budget, or ending).
    mutating func releaseAll(now: MonotonicTime, into output: inout [ReceivedFrame]) {
        release(now: now, forcing: Set(holdUntil.keys), into: &output)
    }

    /// Releases the frames of streams the SRs can now place, whose hold ran out, or in `forcing`.
    mutating func release(now: MonotonicTime, forcing: Set<UInt32>, into output: inout [ReceivedFrame]) {
        guard !held.isEmpty else { return }
        clock.synchroniseIfReady(held: held.map { ($0.frame.ssrc, $0.rtp, $0.frame.completedAt.nanoseconds) })
        var releasing: Set<UInt32> = []
        for (ssrc, deadline) in holdUntil where forcing.contains(ssrc) || now.nanoseconds >= deadline || !clock.needsReport(ssrc: ssrc) {
            releasing.insert(ssrc)
        }
        guard !releasing.isEmpty else { return }
        var kept: [(frame: ReceivedFrame, rtp: Int64)] = []
        for entry in held {
            if releasing.contains(entry.frame.ssrc) {
                output.append(placed(entry.frame, rtp: entry.rtp))
                heldBytes -= entry.frame.frame.data.count
            } else {
                kept.append(entry)
            }
        }
        held = kept
        for ssrc in releasing { holdUntil[ssrc] = nil }
    }

    private mutating func placed(_ frame: ReceivedFrame, rtp: Int64) -> ReceivedFrame {
        var placed = frame
        placed.mediaTime = clock.place(ssrc: frame.ssrc, rtp: rtp, arrival: frame.completedAt)
        return placed
    }
}
