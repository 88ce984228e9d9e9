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

public struct SyncCounters: Sendable, Equatable {
    public var senderReports = 0
    /// SRs refused: NTP zero, or an NTP time far from what the sender's other reports say.
    public var implausibleSenderReports = 0
    /// Senders whose streams' reports disagree too much to align them by (left on arrival time).
    public var inconsistentSenders = 0
    /// RTP timestamps that put a frame over 10 s from its arrival (a jump or a restart):
    /// the stream was re-anchored on arrival instead.
    public var timestampDiscontinuities = 0

    public init() {}
}

/// Media time for one sender's frames. Before its streams have RTCP sender reports, each stream
/// is anchored on the arrival of its first frame. Once every stream that has delivered frames
/// has an SR, all of them follow the sender's NTP clock through one fixed offset to the local
/// clock, so audio and video land in the file as they were captured even when one is delayed
/// on the wire. The offset is chosen so that no stream's time goes backwards at the switch.
struct SenderClock {
    private struct StreamTiming {
        var clockRate: Int
        var unwrapper = SequenceUnwrapper(bits: 32)
        /// Arrival anchoring (before SRs): the first frame's RTP time and arrival.
        var anchor: (rtp: Int64, local: Int64)?
        /// The newest plausible SR: RTP time (unwrapped) and NTP time (ns).
        var report: (rtp: Int64, ntp: Int64)?
        var last: (rtp: Int64, local: Int64, arrival: Int64, followedReport: Bool)?
        /// False once the stream ended; its timing is kept so the SSRC resumes where it was.
        var active = true
    }

    private var streams: [UInt32: StreamTiming] = [:]
    /// Local nanoseconds minus the sender's NTP nanoseconds, once synchronised.
    private(set) var offset: Int64?
    private(set) var inconsistent = false
    /// How far the streams' own reports may disagree before they are not trusted (ns).
    static let maximumDisagreement: Int64 = 5_000_000_000
    /// How far a frame's media time may sit from its arrival before its RTP time is not believed.
    static let maximumDistanceFromArrival: Int64 = 10_000_000_000
    /// How much further than the wall clock one frame's RTP step may move media time.
    static let maximumStepExcess: Int64 = 1_000_000_000
    /// Timings kept per sender, ended streams included.
    static let maximumStreams = 64
    private(set) var discontinuities = 0

    var isSynchronised: Bool { offset != nil }

    mutating func addStream(ssrc: UInt32, clockRate: Int) {
        if streams[ssrc] != nil {
            streams[ssrc]?.active = true
            streams[ssrc]?.clockRate = clockRate
            return
        }
        if streams.count >= SenderClock.maximumStreams { streams = streams.filter(\.value.active) }
        streams[ssrc] = StreamTiming(clockRate: clockRate)
    }

    /// The stream ended; its timing stays (bounded), so a returning SSRC never goes backwards.
    mutating func removeStream(ssrc: UInt32) { streams[ssrc]?.active = false }

    /// Takes an SR for `ssrc`; false when it is implausible and ignored.
    mutating func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, arrival: MonotonicTime) -> Bool {
        guard var timing = streams[ssrc] else { return true }  // not a stream of ours (yet): nothing to align
        // aiortc and others send NTP 0 before their first packet: no mapping at all.
        guard ntpTimestamp != 0 else { return false }
        let ntp = nanoseconds(ntp: ntpTimestamp)
        if let offset, ((ntp &+ offset) &- arrival.nanoseconds).magnitude > UInt64(SenderClock.maximumDisagreement) { return false }
        timing.report = (timing.unwrapper.unwrap(rtpTimestamp), ntp)
        streams[ssrc] = timing
        inconsistent = false  // fresh data: synchronising may be tried again
        return true
    }

    /// The frame's media time on the local monotonic clock.
    mutating func mediaTime(ssrc: UInt32, rtpTimestamp: UInt32, arrival: MonotonicTime) -> MonotonicTime {
        guard var timing = streams[ssrc] else { return arrival }
        let rtp = timing.unwrapper.unwrap(rtpTimestamp)
        if offset == nil && !inconsistent { synchroniseIfReady(arrivingSSRC: ssrc, rtp: rtp, arrival: arrival.nanoseconds) }
        timing = streams[ssrc] ?? timing
        var local: Int64
        var followsReport = false
        if let offset, let report = timing.report {
            local = report.ntp &+ nanoseconds(ticks: rtp &- report.rtp, clockRate: timing.clockRate) &+ offset
            followsReport = true
        } else {
            if timing.anchor == nil { timing.anchor = (rtp, arrival.nanoseconds) }
            let anchor = timing.anchor ?? (rtp, arrival.nanoseconds)
            local = anchor.local &+ nanoseconds(ticks: rtp &- anchor.rtp, clockRate: timing.clockRate)
        }
        // An RTP time far from the arrival, or a step between frames that outruns the wall clock
        // by more than a second (either way), is a jump or a restart of the sender's timestamps,
        // not media from hours away: re-anchor on arrival (the next SR re-syncs it). The step is
        // not checked across the switch to SR timing, which moves a stream on purpose.
        var jumped = (local &- arrival.nanoseconds).magnitude > UInt64(SenderClock.maximumDistanceFromArrival)
        if let last = timing.last, last.followedReport == followsReport {
            let step = local &- last.local
            jumped = jumped || step &- (arrival.nanoseconds &- last.arrival) > SenderClock.maximumStepExcess || step < -SenderClock.maximumStepExcess
        }
        if jumped {
            discontinuities += 1
            timing.anchor = (rtp, arrival.nanoseconds)
            timing.report = nil
            local = arrival.nanoseconds
            followsReport = false
        }
        // Never backwards within a stream (a late SR for a new stream, a reordered timestamp).
        if let last = timing.last, local < last.local { local = last.local }
        timing.last = (rtp, local, arrival.nanoseconds, followsReport)
        streams[ssrc] = timing
        return MonotonicTime(nanoseconds: local)
    }

    /// Switches to SR timing once every stream that has delivered frames has an SR.
    private mutating func synchroniseIfReady(arrivingSSRC: UInt32, rtp: Int64, arrival: Int64) {
        guard let arriving = streams[arrivingSSRC], arriving.report != nil else { return }
        let started = streams.filter { $0.value.active && ($0.value.last != nil || $0.key == arrivingSSRC) }
        guard started.allSatisfy({ $0.value.report != nil }) else { return }
        // Each stream's view of local − NTP: where its frames already are (so nothing moves
        // backwards), or for the arriving one without history, where it arrives.
        var candidates: [Int64] = []
        for (ssrc, timing) in started {
            guard let report = timing.report else { continue }
            // Wrapping arithmetic: the inputs are bounded (see `nanoseconds`), and an absurd
            // result is caught by the disagreement check below instead of trapping.
            if let last = timing.last {
                candidates.append(last.local &- (report.ntp &+ nanoseconds(ticks: last.rtp &- report.rtp, clockRate: timing.clockRate)))
            } else if ssrc == arrivingSSRC {
                candidates.append(arrival &- (report.ntp &+ nanoseconds(ticks: rtp &- report.rtp, clockRate: timing.clockRate)))
            }
        }
        guard let high = candidates.max(), let low = candidates.min() else { return }
        guard (high &- low).magnitude <= UInt64(SenderClock.maximumDisagreement), high &- low >= 0 else {
            inconsistent = true
            return
        }
        offset = high
    }
}
