import WireCoding

/// One sender's frames on their way to the recorder. The sender's first frames wait until its
/// SRs can place every stream that has frames, so its file starts with audio and video already
/// aligned, on the senders' RTP clocks, instead of starting on arrival time and slewing into
/// line for tens of seconds. The hold is only at the sender's start: once a frame went out, the
/// recorder may have written past anything held later, so every later frame is placed at once
/// (a stream that starts later without an SR starts on arrival time and slews when its SR comes).
///
/// How long: `maximumHold` while no stream of the sender has a report (it may never send
/// any), and up to `maximumReportWait` once one has. libwebrtc, every real Sora publisher,
/// sends an audio SR only every 5 s (randomised 2.5–7.5 s) against 1 s for video: without the
/// longer wait its audio started on arrival time in most sessions and then slid by 1 ms/s.
///
/// A stream that starts after the others, when the sender is already synchronised but before
/// an SR of its own came, waits for that SR too (`lateStreamWait`): libwebrtc paces its first
/// video keyframe out over hundreds of milliseconds, and the stream's first SR may come after
/// it. Only near the sender's start (`startWindow`), while the recorder still waits for the
/// first video to start the file; later, frames placed behind what it wrote would be lost, so
/// such a stream starts on arrival time and slews.
struct SenderTimeline {
    private(set) var clock = SenderClock()
    private var held: [(frame: ReceivedFrame, rtp: Int64)] = []
    /// When the first held frame arrived (nil: nothing held).
    private var heldSince: Int64?
    /// A frame of this sender went out: no more holding.
    private var started = false
    private(set) var heldBytes = 0
    /// Frames of streams that started late, waiting for their own SR (see the type's note).
    private var lateHeld: [(frame: ReceivedFrame, rtp: Int64)] = []
    private var lateHeldUntil: Int64?
    /// When the sender's first frame arrived.
    private var firstArrival: Int64?
    /// Under the recorder's hold for the other track (1.4 s: the retransmission wait and
    /// 400 ms): a frame held longer would find the other track written past it and be lost.
    /// libwebrtc sends video SRs every 1 s (0.5–1.5 s), aiortc every 0.5–1.5 s: most late
    /// streams get theirs in time, and the rest start on arrival time as before.
    static let lateStreamWait: Int64 = 1_000_000_000
    /// Within the recorder's wait for a file's first video (5 s), with room for the wait itself.
    static let startWindow: Int64 = 3_000_000_000

    /// Hold no longer than this while no stream has a report; 0 holds nothing.
    let maximumHold: Int64
    /// Hold no longer than this once a stream has a report and another still waits for one.
    let maximumReportWait: Int64
    /// Past this many frames held, the sender's frames are released at once (8 s of 30 fps
    /// video and 20 ms audio is 640).
    static let maximumHeldFrames = 1_024
    /// …or past this many bytes (8 s of an 8 Mbit/s stream stays under it).
    static let maximumHeldBytes = 8 << 20
    /// libwebrtc's longest audio SR interval (1.5 × 5 s) and a little for the path.
    static let defaultReportWait: Int64 = 8_000_000_000

    init(maximumHold: Int64, maximumReportWait: Int64 = SenderTimeline.defaultReportWait) {
        self.maximumHold = max(0, maximumHold)
        self.maximumReportWait = maximumHold > 0 ? max(self.maximumHold, maximumReportWait) : 0
    }

    /// When the held frames go out whatever the SRs say.
    private var holdUntil: Int64? {
        guard let heldSince else { return nil }
        return heldSince &+ (clock.hasAnyReport ? maximumReportWait : maximumHold)
    }

    /// Asked twice per frame (`SenderTimelines`): no array built for it.
    var nextDeadline: MonotonicTime? {
        switch (holdUntil, lateHeldUntil) {
        case (nil, nil): nil
        case (let hold?, nil): MonotonicTime(nanoseconds: hold)
        case (nil, let late?): MonotonicTime(nanoseconds: late)
        case (let hold?, let late?): MonotonicTime(nanoseconds: min(hold, late))
        }
    }
    var counters: SyncCounters { clock.counters }

    mutating func addStream(ssrc: UInt32, clockRate: Int) { clock.addStream(ssrc: ssrc, clockRate: clockRate) }

    /// See `SenderClock.restartTimeline`.
    mutating func restartTimeline(ssrc: UInt32) { clock.restartTimeline(ssrc: ssrc) }

    /// The stream ended: what the sender holds is placed first (on arrival time if need be).
    mutating func removeStream(ssrc: UInt32, now: MonotonicTime, into output: inout [ReceivedFrame]) {
        if held.contains(where: { $0.frame.ssrc == ssrc }) { releaseAll(now: now, into: &output) }
        clock.removeStream(ssrc: ssrc)
    }

    mutating func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrival: MonotonicTime,
                               into output: inout [ReceivedFrame]) -> Bool {
        let plausible = clock.senderReport(ssrc: ssrc, ntpTimestamp: ntpTimestamp, rtpTimestamp: rtpTimestamp, arrival: arrival)
        if lateHeldUntil != nil { releaseLate(now: arrival, into: &output) }
        if holdUntil != nil {
            release(now: arrival, into: &output)
        } else if started && !clock.isSynchronised {
            // The hold ran out before the SRs came: sync now, from where the frames already are
            // (the streams then slew into line).
            clock.synchroniseIfReady(held: [])
        }
        return plausible
    }

    /// Places `frame` (its `mediaTime` is set here), or holds it for its sender's SRs.
    mutating func take(_ frame: ReceivedFrame, into output: inout [ReceivedFrame]) {
        let rtp = clock.unwrap(ssrc: frame.ssrc, rtpTimestamp: frame.frame.rtpTimestamp)
        let arrival = frame.receivedAt.nanoseconds
        if firstArrival == nil { firstArrival = arrival }
        if started, waitsForOwnReport(frame.ssrc, arrival: arrival) {
            holdLate(frame, rtp: rtp, into: &output)
            return
        }
        guard !started, maximumHold > 0, heldSince != nil || clock.needsReport(ssrc: frame.ssrc) else {
            started = true
            output.append(placed(frame, rtp: rtp))
            return
        }
        if heldSince == nil { heldSince = frame.receivedAt.nanoseconds }
        held.append((frame, rtp))
        heldBytes += frame.frame.data.count
        clock.countHeld()
        if held.count > Self.maximumHeldFrames || heldBytes > Self.maximumHeldBytes {
            releaseAll(now: frame.receivedAt, into: &output)
        } else {
            release(now: frame.receivedAt, into: &output)
        }
    }

    private func waitsForOwnReport(_ ssrc: UInt32, arrival: Int64) -> Bool {
        if lateHeld.contains(where: { $0.frame.ssrc == ssrc }) { return true }  // its earlier frames wait
        guard maximumHold > 0, let firstArrival, arrival &- firstArrival < Self.startWindow else { return false }
        return clock.awaitsOwnReport(ssrc: ssrc)
    }

    private mutating func holdLate(_ frame: ReceivedFrame, rtp: Int64, into output: inout [ReceivedFrame]) {
        let arrival = frame.receivedAt.nanoseconds
        if lateHeldUntil == nil { lateHeldUntil = min(arrival &+ Self.lateStreamWait, (firstArrival ?? arrival) &+ Self.startWindow) }
        lateHeld.append((frame, rtp))
        heldBytes += frame.frame.data.count
        clock.countHeld()
        if lateHeld.count > Self.maximumHeldFrames || heldBytes > Self.maximumHeldBytes {
            placeLate(into: &output) { _ in true }
        }
    }

    /// Places the late streams' frames whose SR came, and all of them once the wait ran out.
    private mutating func releaseLate(now: MonotonicTime, into output: inout [ReceivedFrame]) {
        guard let lateHeldUntil else { return }
        let expired = now.nanoseconds >= lateHeldUntil
        placeLate(into: &output) { [clock] ssrc in expired || !clock.awaitsOwnReport(ssrc: ssrc) }
    }

    private mutating func placeLate(into output: inout [ReceivedFrame], where ready: (UInt32) -> Bool) {
        var waiting: [(frame: ReceivedFrame, rtp: Int64)] = []
        for entry in lateHeld {
            if ready(entry.frame.ssrc) {
                heldBytes -= entry.frame.frame.data.count
                output.append(placed(entry.frame, rtp: entry.rtp))
            } else {
                waiting.append(entry)
            }
        }
        lateHeld = waiting
        if lateHeld.isEmpty { lateHeldUntil = nil }
    }

    /// Releases every held frame (the hold ran out, the receiver is over its memory budget, or ending).
    mutating func releaseAll(now: MonotonicTime, into output: inout [ReceivedFrame]) {
        placeLate(into: &output) { _ in true }
        guard !held.isEmpty else { return }
        synchroniseHeld()
        placeHeld(into: &output)
    }

    /// Releases the held frames once the SRs can place them all, or the hold ran out.
    mutating func release(now: MonotonicTime, into output: inout [ReceivedFrame]) {
        releaseLate(now: now, into: &output)
        guard let holdUntil, !held.isEmpty else { return }
        synchroniseHeld()
        guard now.nanoseconds >= holdUntil || clock.isSynchronised else { return }
        placeHeld(into: &output)
    }

    private mutating func synchroniseHeld() {
        clock.synchroniseIfReady(held: held.map { ($0.frame.ssrc, $0.rtp, $0.frame.receivedAt.nanoseconds) })
    }

    private mutating func placeHeld(into output: inout [ReceivedFrame]) {
        for entry in held {
            heldBytes -= entry.frame.frame.data.count
            output.append(placed(entry.frame, rtp: entry.rtp))
        }
        held.removeAll()
        heldSince = nil
        started = true
    }

    private mutating func placed(_ frame: ReceivedFrame, rtp: Int64) -> ReceivedFrame {
        var placed = frame
        // By when the socket read it: the core may have reached it seconds later.
        placed.mediaTime = clock.place(ssrc: frame.ssrc, rtp: rtp, arrival: frame.receivedAt)
        return placed
    }
}
