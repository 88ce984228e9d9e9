import RTP
import WireCoding

/// RFC 3550 reception statistics of one media SSRC, for its receiver-report block (§6.4.1,
/// appendix A.3 and A.8). Only packets that arrived on the SSRC itself count: a loss repaired by
/// RTX is still a loss on the wire, which is what the sender's rate control wants to hear.
struct ReceptionStatistics {
    private var baseSequence: Int64?
    private(set) var highestSequence: Int64 = 0
    private(set) var received: Int64 = 0
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    /// Interarrival jitter in RTP timestamp units, times 16 (A.8 keeps it scaled).
    private var scaledJitter: Int64 = 0
    private var lastTransit: Int64?
    /// The middle 32 bits of the last SR's NTP time, and when it arrived.
    private var lastSenderReport: (compactNTP: UInt32, arrival: MonotonicTime)?
    let clockRate: Int

    init(clockRate: Int) { self.clockRate = max(1, clockRate) }

    mutating func record(sequence: Int64, rtpTimestamp: UInt32, arrival: MonotonicTime) {
        if baseSequence == nil {
            baseSequence = sequence
            highestSequence = sequence
        }
        received += 1
        if sequence > highestSequence { highestSequence = sequence }
        // Transit time in RTP units; the local clock only needs to be steady, not synchronised.
        let arrivalTicks = Int64(truncatingIfNeeded: (Int128(arrival.nanoseconds) * Int128(clockRate)) / 1_000_000_000)
        let transit = arrivalTicks &- Int64(rtpTimestamp)
        if let lastTransit {
            var difference = transit &- lastTransit
            if difference < 0 { difference = 0 &- difference }
            // RTP timestamps wrap at 2^32: a difference that big is a wrap or a jump, not jitter.
            if difference < 1 << 31 { scaledJitter += difference - (scaledJitter + 8) / 16 }
        }
        lastTransit = transit
    }

    /// Packets from before the first one came (a stream's start moved back): they are expected too.
    mutating func extendBase(to sequence: Int64) {
        guard let base = baseSequence, sequence < base else { return }
        baseSequence = sequence
    }

    /// Restarts counting after a sequence jump (a new numbering, not a huge loss).
    mutating func restart(at sequence: Int64) {
        baseSequence = sequence
        highestSequence = sequence
        received = 0
        expectedPrior = 0
        receivedPrior = 0
    }

    /// True once an SR has been echoed material: a report block can carry LSR/DLSR.
    var hasSenderReport: Bool { lastSenderReport != nil }

    mutating func senderReport(ntpTimestamp: UInt64, arrival: MonotonicTime) {
        lastSenderReport = (UInt32(truncatingIfNeeded: ntpTimestamp >> 16), arrival)
    }

    var expected: Int64 { baseSequence.map { highestSequence - $0 + 1 } ?? 0 }
    var heardSinceLastReport: Bool { received != receivedPrior }
    var cumulativeLost: Int64 { max(0, expected - received) }
    /// Interarrival jitter in RTP timestamp units.
    var jitter: UInt32 { UInt32(clamping: scaledJitter / 16) }

    var jitterMilliseconds: Double { Double(jitter) * 1000 / Double(clockRate) }

    /// The report block for this interval; advances the interval's baseline.
    mutating func reportBlock(ssrc: UInt32, now: MonotonicTime) -> RTCPReportBlock {
        let expectedInterval = expected - expectedPrior
        let receivedInterval = received - receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 = expectedInterval <= 0 || lostInterval <= 0 ? 0 : UInt8(clamping: (lostInterval << 8) / expectedInterval)
        var lsr: UInt32 = 0
        var dlsr: UInt32 = 0
        if let last = lastSenderReport {
            lsr = last.compactNTP
            // Delay since the last SR, in units of 1/65536 s.
            let delay = max(0, now.nanoseconds - last.arrival.nanoseconds)
            dlsr = UInt32(clamping: (Int128(delay) * 65_536) / 1_000_000_000)
        }
        // 24-bit signed field: clamp instead of wrapping.
        let cumulative = Int32(clamping: min(cumulativeLost, 0x7F_FFFF))
        return RTCPReportBlock(ssrc: ssrc, fractionLost: fraction, cumulativeLost: cumulative,
                               highestSequence: UInt32(truncatingIfNeeded: highestSequence), jitter: jitter,
                               lastSenderReport: lsr, delaySinceLastSenderReport: dlsr)
    }
}
