import WireCoding

/// Converts RTP ticks to nanoseconds without overflow, whatever the ticks and clock rate (both
/// come from the network): whole seconds are clamped to ±2^32 (136 years), which keeps the
/// result and the sum with an NTP time inside Int64.
@inline(__always)
func nanoseconds(ticks: Int64, clockRate: Int) -> Int64 {
    let rate = Int64(min(max(1, clockRate), 1 << 30))
    let bound: Int64 = 1 << 32
    let seconds = min(max(ticks / rate, -bound), bound)
    return seconds * 1_000_000_000 + ticks % rate * 1_000_000_000 / rate
}

/// An NTP timestamp (RFC 3550 §4: seconds since 1900 in 32.32 fixed point) in nanoseconds.
@inline(__always)
func nanoseconds(ntp: UInt64) -> Int64 {
    Int64(ntp >> 32) * 1_000_000_000 + Int64(((ntp & 0xFFFF_FFFF) * 1_000_000_000) >> 32)
}

/// Media time for one sender's frames, on the local monotonic clock.
///
/// Within a stream, time is the sender's RTP clock and nothing else: media time = the stream's
/// origin + (RTP time − the stream's first RTP time) / clock rate, exact in integers. Sync never
/// moves a frame against its neighbours; it moves a stream's origin, slowly (`maximumSlew`):
/// - Each stream maps its RTP time to the sender's NTP clock through a line fitted over its
///   recent SRs (`RTPToNTPEstimator`). One offset (local − NTP) for the whole sender puts
///   its streams where the sender captured them relative to each other (A/V sync).
/// - That offset follows a delay floor: the largest, over the sender's streams, of the windowed
///   minimum of (arrival − NTP capture time). So the sender's clock drifting against ours moves
///   the offset with it, and the drift never piles up against the other senders' files.
/// - A stream without SRs follows its own delay floor the same way.
/// - A real discontinuity (the step between two frames outruns the wall clock by a second, or a
///   frame lands over 10 s from its arrival) starts a new origin and is counted.
struct SenderClock {
    private struct Timeline {
        var firstRTP: Int64
        var origin: Int64
        var lastRTP: Int64
        var lastMedia: Int64
        var lastArrival: Int64
        var slewing = false
    }

    private struct StreamTiming {
        var clockRate: Int
        var unwrapper = SequenceUnwrapper(bits: 32)
        var estimator: RTPToNTPEstimator
        var timeline: Timeline?
        var floor = WindowedMinimum()
        /// The floor's samples are arrival − NTP capture time (else arrival − RTP time elapsed).
        var floorFollowsReports = false
        /// False once the stream ended; its timing is kept so the SSRC resumes where it was.
        var active = true

        init(clockRate: Int) {
            self.clockRate = clockRate
            estimator = RTPToNTPEstimator(clockRate: clockRate)
        }
    }

    /// A sender has a few streams (audio, video, RTX SSRCs are not timed): a small array
    /// searched linearly, changed in place. A dictionary's in-place change runs a coroutine
    /// that allocated on every frame (measured: about two mallocs per frame).
    private var streams: [(ssrc: UInt32, timing: StreamTiming)] = []

    private func index(of ssrc: UInt32) -> Int? {
        streams.firstIndex { $0.ssrc == ssrc }
    }
    /// Local nanoseconds minus the sender's NTP nanoseconds, once synchronised.
    private(set) var offset: Int64?
    /// When the offset was first decided (arrival time): the delay floor steers it only after
    /// `floorSettling`, once every stream had time to add its own samples.
    private var synchronisedAt: Int64?
    /// The delay floor's lasting change that was not drift (see `followFloor`), and when the
    /// floor last moved the offset or its bias.
    private var floorBias: Int64 = 0
    private var floorAnchor: Int64?
    private(set) var inconsistent = false
    private(set) var counters = SyncCounters()

    /// How far the streams' own reports may disagree before they are not trusted (ns).
    static let maximumDisagreement: Int64 = 5_000_000_000
    /// How far a frame's media time may sit from its arrival before its RTP time is not believed.
    static let maximumDistanceFromArrival: Int64 = 10_000_000_000
    /// How much further than the wall clock one frame's RTP step may move media time.
    static let maximumStepExcess: Int64 = 1_000_000_000
    /// Origins move at most 1 ms per second of media.
    static let maximumSlewPerSecond: Int64 = 1_000_000
    /// A stream starts slewing when its origin is this far from where sync wants it, and stops
    /// once within `slewSettled`: SR noise of a millisecond or two moves nothing.
    static let slewThreshold: Int64 = 3_000_000
    static let slewSettled: Int64 = 200_000
    /// The sender's offset follows its delay floor once they differ by more than this.
    static let offsetTolerance: Int64 = 3_000_000
    static let floorSettling: Int64 = 5_000_000_000
    /// The fastest two clocks are believed to drift apart: 500 µs per second (crystals stay
    /// within 100 ppm); a delay floor that moves faster found a better path, not a drift.
    static let maximumDriftPerMillion: Int64 = 500
    /// Timings kept per sender, ended streams included.
    static let maximumStreams = 64

    var isSynchronised: Bool { offset != nil }
    /// Some active stream can already be mapped by its SRs: the sender does send them.
    var hasAnyReport: Bool { streams.contains { $0.timing.active && $0.timing.estimator.hasMapping } }

    mutating func addStream(ssrc: UInt32, clockRate: Int) {
        if let i = index(of: ssrc) {
            streams[i].timing.active = true
            if streams[i].timing.clockRate != clockRate {
                streams[i].timing = StreamTiming(clockRate: clockRate)  // another codec clock: a new timeline
            }
            return
        }
        if streams.count >= SenderClock.maximumStreams { streams.removeAll { !$0.timing.active } }
        streams.append((ssrc, StreamTiming(clockRate: clockRate)))
    }

    /// The stream ended; its timing stays (bounded), so a returning SSRC goes on from where it was.
    mutating func removeStream(ssrc: UInt32) {
        if let i = index(of: ssrc) { streams[i].timing.active = false }
    }

    /// The stream's next frame starts a new timeline, placed by its sender's reports where it
    /// has them: after an overload pause the step since its last frame says nothing about the
    /// network (it was recbot that stopped reading it), so it must not be judged against arrival.
    mutating func restartTimeline(ssrc: UInt32) {
        if let i = index(of: ssrc) { streams[i].timing.timeline = nil }
    }

    /// A frame waits for SRs before it is placed (see `SenderTimeline`).
    mutating func countHeld() { counters.framesHeldForSync += 1 }

    /// The 64-bit RTP time of a frame (call in arrival order).
    mutating func unwrap(ssrc: UInt32, rtpTimestamp: UInt32) -> Int64 {
        guard let i = index(of: ssrc) else { return Int64(rtpTimestamp) }
        return streams[i].timing.unwrapper.unwrap(rtpTimestamp)
    }

    /// Takes an SR for `ssrc`; false when it is implausible and ignored.
    mutating func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrival: MonotonicTime) -> Bool {
        guard let i = index(of: ssrc) else { return true }  // not a stream of ours (yet): nothing to align
        // aiortc and others send NTP 0 before their first packet: no mapping at all.
        guard ntpTimestamp != 0 else { return false }
        let ntp = nanoseconds(ntp: ntpTimestamp)
        if let offset, ((ntp &+ offset) &- arrival.nanoseconds).magnitude > UInt64(SenderClock.maximumDisagreement) { return false }
        let rtp = streams[i].timing.unwrapper.unwrap(rtpTimestamp)
        switch streams[i].timing.estimator.add(rtp: rtp, ntp: ntp) {
        case .accepted, .restarted: inconsistent = false  // fresh data: synchronising may be tried again
        case .outlier: counters.outlierSenderReports += 1
        case .ignored: break
        }
        return true
    }

    /// The stream's first frame would have to start on arrival time: its sender is not
    /// synchronised yet (see `SenderTimeline` for why only then).
    func needsReport(ssrc: UInt32) -> Bool {
        guard let i = index(of: ssrc), streams[i].timing.timeline == nil else { return false }
        return offset == nil
    }

    /// The stream has no frame placed and no SR of its own, though its sender is synchronised:
    /// placed now, it would start on arrival time (and slew for as long as it was late).
    func awaitsOwnReport(ssrc: UInt32) -> Bool {
        guard offset != nil, let i = index(of: ssrc), streams[i].timing.timeline == nil else { return false }
        return !streams[i].timing.estimator.hasMapping
    }

    /// Decides the sender's offset once every stream that has frames (placed, or held at
    /// `held`: SSRC, 64-bit RTP time, arrival) can be mapped to NTP. Nothing moves backwards:
    /// each stream's candidate is where its frames already are, or the least delay among its
    /// held frames; the largest candidate wins, so no stream lands before its arrival.
    mutating func synchroniseIfReady(held: [(ssrc: UInt32, rtp: Int64, arrival: Int64)]) {
        guard offset == nil, !inconsistent else { return }
        var candidates: [UInt32: Int64] = [:]
        for (ssrc, timing) in streams where timing.active {
            guard let timeline = timing.timeline else { continue }
            guard let ntp = timing.estimator.ntp(at: timeline.lastRTP) else { return }
            candidates[ssrc] = timeline.lastMedia &- ntp
        }
        for frame in held {
            guard let i = index(of: frame.ssrc), streams[i].timing.timeline == nil else { continue }
            let timing = streams[i].timing
            guard let ntp = timing.estimator.ntp(at: frame.rtp) else { return }
            candidates[frame.ssrc] = min(candidates[frame.ssrc] ?? .max, frame.arrival &- ntp)
        }
        guard let high = candidates.values.max(), let low = candidates.values.min() else { return }
        guard high &- low >= 0, (high &- low).magnitude <= UInt64(SenderClock.maximumDisagreement) else {
            inconsistent = true
            counters.inconsistentSenders += 1
            return
        }
        offset = high
        synchronisedAt = held.map(\.arrival).max() ?? streams.compactMap { $0.timing.timeline?.lastArrival }.max()
    }

    /// The media time of a frame (its 64-bit RTP time from `unwrap`) that arrived at `arrival`.
    /// The stream's timing changes in place (its arrays are never copied); its timeline, plain
    /// integers, is worked on as a local and stored at the end.
    mutating func place(ssrc: UInt32, rtp: Int64, arrival: MonotonicTime) -> MonotonicTime {
        guard let i = index(of: ssrc) else { return arrival }
        let now = arrival.nanoseconds
        let clockRate = streams[i].timing.clockRate
        var timeline = streams[i].timing.timeline ?? startTimeline(i, rtp: rtp, arrival: now)
        follow(i, &timeline, rtp: rtp, arrival: now)
        var media = timeline.origin &+ nanoseconds(ticks: rtp &- timeline.firstRTP, clockRate: clockRate)
        if let restart = discontinuity(timeline, media: media, rtp: rtp, arrival: now) {
            counters.timestampDiscontinuities += 1
            timeline = Timeline(firstRTP: rtp, origin: restart, lastRTP: rtp, lastMedia: restart, lastArrival: now)
            streams[i].timing.estimator.reset()  // its reports describe the old timestamps
            streams[i].timing.floor.reset()
            media = restart
        }
        if rtp >= timeline.lastRTP {
            (timeline.lastRTP, timeline.lastMedia, timeline.lastArrival) = (rtp, media, now)
        }
        streams[i].timing.timeline = timeline
        return MonotonicTime(nanoseconds: media)
    }

    private mutating func startTimeline(_ i: Int, rtp: Int64, arrival: Int64) -> Timeline {
        if let offset, let ntp = streams[i].timing.estimator.ntp(at: rtp) {
            return Timeline(firstRTP: rtp, origin: ntp &+ offset, lastRTP: rtp, lastMedia: ntp &+ offset, lastArrival: arrival)
        }
        counters.arrivalStarts += 1
        return Timeline(firstRTP: rtp, origin: arrival, lastRTP: rtp, lastMedia: arrival, lastArrival: arrival)
    }

    /// Feeds the delay floor of stream `i` and slews the origin towards where sync wants it.
    private mutating func follow(_ i: Int, _ timeline: inout Timeline, rtp: Int64, arrival: Int64) {
        let clockRate = streams[i].timing.clockRate
        let elapsed = nanoseconds(ticks: rtp &- timeline.firstRTP, clockRate: clockRate)
        let mapped = offset != nil ? streams[i].timing.estimator.ntp(at: rtp) : nil
        if streams[i].timing.floorFollowsReports != (mapped != nil) {
            streams[i].timing.floor.reset()  // another kind of sample: the old ones say nothing about the new
            streams[i].timing.floorFollowsReports = mapped != nil
        }
        let target: Int64
        if let ntp = mapped {
            // The stored timeline is still the one before this frame (nil for a new stream).
            if streams[i].timing.floor.add(arrival &- ntp, at: arrival) { followFloor(now: arrival) }
            target = ntp &+ (offset ?? 0) &- elapsed
        } else {
            // No SR timing: the stream's origin follows its own delay floor.
            _ = streams[i].timing.floor.add(arrival &- elapsed, at: arrival)
            guard let floor = streams[i].timing.floor.minimum else { return }
            target = floor
        }
        slew(&timeline, toward: target, mediaElapsed: nanoseconds(ticks: rtp &- timeline.lastRTP, clockRate: clockRate))
    }

    /// Moves the origin by at most `maximumSlewPerSecond` per second of media since the last frame.
    private mutating func slew(_ timeline: inout Timeline, toward target: Int64, mediaElapsed: Int64) {
        let error = target &- timeline.origin
        if !timeline.slewing {
            guard error.magnitude > UInt64(SenderClock.slewThreshold) else { return }
            timeline.slewing = true
            counters.slewCorrections += 1
        }
        guard error.magnitude > UInt64(SenderClock.slewSettled) else {
            timeline.slewing = false
            return
        }
        // 1 ms per second of media: elapsed / 1000 (a long gap allows at most one second's worth).
        let allowed = min(max(mediaElapsed, 0), 1_000_000_000) / (1_000_000_000 / SenderClock.maximumSlewPerSecond)
        let move = min(max(error, -allowed), allowed)
        timeline.origin &+= move
        counters.slewedNanoseconds &+= move < 0 ? -move : move
    }

    /// The sender's offset follows the largest of its streams' delay floors (see the type's note),
    /// but only as fast as clocks drift. A floor that moves faster did not find a drift but a
    /// better path: the first frames came slowly (a keyframe paced out, bandwidth probing), and
    /// later ones find the base delay. Following that would slew every block of the sender off
    /// its RTP timestamps for tens of seconds to gain nothing within the file; the move is kept
    /// as the floor's bias instead, and only what changes after it counts as drift.
    private mutating func followFloor(now: Int64) {
        guard let offset, let synchronisedAt, now &- synchronisedAt >= SenderClock.floorSettling else { return }
        var floor: Int64?
        for i in streams.indices where streams[i].timing.active && streams[i].timing.timeline != nil && streams[i].timing.floorFollowsReports {
            if let value = streams[i].timing.floor.minimum { floor = max(floor ?? value, value) }
        }
        guard let floor else { return }
        let change = floor &- offset &- floorBias
        guard change.magnitude > UInt64(SenderClock.offsetTolerance) else { return }
        let since = max(0, now &- (floorAnchor ?? synchronisedAt))
        floorAnchor = now
        if change.magnitude > UInt64(since / 1_000_000 * SenderClock.maximumDriftPerMillion) {
            floorBias &+= change
            counters.delayFloorSteps += 1
            return
        }
        self.offset = offset &+ change
    }

    /// A new origin when the frame's time cannot be the stream's clock going on; nil otherwise.
    private func discontinuity(_ timeline: Timeline, media: Int64, rtp: Int64, arrival: Int64) -> Int64? {
        let step = media &- timeline.lastMedia
        let wall = arrival &- timeline.lastArrival
        var restart: Int64?
        if step &- wall > SenderClock.maximumStepExcess || step < -SenderClock.maximumStepExcess {
            // Keep the stream's placement against its arrivals, and never start before its last frame.
            let lag = min(max(timeline.lastMedia &- timeline.lastArrival, -SenderClock.maximumStepExcess), SenderClock.maximumStepExcess)
            restart = max(arrival &+ lag, timeline.lastMedia &+ 1_000_000)
        }
        let placed = restart ?? media
        if (placed &- arrival).magnitude > UInt64(SenderClock.maximumDistanceFromArrival) { restart = arrival }
        return restart
    }
}
