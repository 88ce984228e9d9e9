import RTP
import WireCoding

/// Counters of one received stream (or, summed, of a sender).
public struct ReceiveCounters: Sendable, Equatable {
    /// Distinct media packets taken in, recovered ones included.
    public var packets = 0
    public var duplicates = 0
    /// Packets that arrived after their place had been given up (counted, never written out of order).
    public var lateArrivals = 0
    /// Packets given up as lost after recovery failed (or, without NACK, after the reorder wait).
    public var lost = 0
    /// Missing packets that arrived in time as RTX retransmissions.
    public var recovered = 0
    /// Missing packets that arrived late, in time, on their own SSRC (reordered, or resent without RTX).
    public var reordered = 0
    /// RTX packets for sequence numbers that were not missing (or beyond the stream): dropped.
    public var unexpectedRetransmissions = 0
    /// Sequence numbers asked for in NACKs (one packet asked for twice counts twice).
    public var nackedSequenceNumbers = 0
    public var pictureLossIndications = 0
    public var fullIntraRequests = 0
    /// Jumps in sequence numbering too large to be loss (counted instead of recovered).
    public var sequenceJumps = 0
    /// Unanswered gaps given up early because a whole keyframe was already held after them.
    public var gapsSkippedToKeyframe = 0
    /// Times the stream's video was paused for overload (its pictures dropped unread meanwhile).
    public var overloadPauses = 0
    public var framesEmitted = 0
    public var framesDropped = FrameDropCounters()
    /// Interarrival jitter, the largest among the streams summed (ms).
    public var jitterMilliseconds = 0.0

    public init() {}

    public var keyframeRequests: Int { pictureLossIndications + fullIntraRequests }

    public static func + (lhs: ReceiveCounters, rhs: ReceiveCounters) -> ReceiveCounters {
        var sum = combined(lhs, rhs, +)
        sum.framesDropped = lhs.framesDropped + rhs.framesDropped
        sum.jitterMilliseconds = max(lhs.jitterMilliseconds, rhs.jitterMilliseconds)
        return sum
    }

    /// What was counted since `earlier`, a snapshot of the same counters (a part of a
    /// recording that started mid-connection); the jitter is the current one.
    public func since(_ earlier: ReceiveCounters) -> ReceiveCounters {
        var result = Self.combined(self, earlier) { max(0, $0 - $1) }
        result.framesDropped = framesDropped.since(earlier.framesDropped)
        result.jitterMilliseconds = jitterMilliseconds
        return result
    }

    private static func combined(_ lhs: ReceiveCounters, _ rhs: ReceiveCounters, _ op: (Int, Int) -> Int) -> ReceiveCounters {
        var result = ReceiveCounters()
        result.packets = op(lhs.packets, rhs.packets)
        result.duplicates = op(lhs.duplicates, rhs.duplicates)
        result.lateArrivals = op(lhs.lateArrivals, rhs.lateArrivals)
        result.lost = op(lhs.lost, rhs.lost)
        result.recovered = op(lhs.recovered, rhs.recovered)
        result.reordered = op(lhs.reordered, rhs.reordered)
        result.unexpectedRetransmissions = op(lhs.unexpectedRetransmissions, rhs.unexpectedRetransmissions)
        result.nackedSequenceNumbers = op(lhs.nackedSequenceNumbers, rhs.nackedSequenceNumbers)
        result.pictureLossIndications = op(lhs.pictureLossIndications, rhs.pictureLossIndications)
        result.fullIntraRequests = op(lhs.fullIntraRequests, rhs.fullIntraRequests)
        result.sequenceJumps = op(lhs.sequenceJumps, rhs.sequenceJumps)
        result.gapsSkippedToKeyframe = op(lhs.gapsSkippedToKeyframe, rhs.gapsSkippedToKeyframe)
        result.overloadPauses = op(lhs.overloadPauses, rhs.overloadPauses)
        result.framesEmitted = op(lhs.framesEmitted, rhs.framesEmitted)
        return result
    }
}

/// What one packet or timer did to a stream.
struct StreamOutput {
    var assembled = AssemblerOutput()
    /// New gaps appeared: NACK them now rather than at the next timer.
    var newlyMissing = false
    /// A retransmission answered our first NACK for it: a round-trip time sample (ns).
    var roundTripSample: Int64?

    /// Empty again, keeping the frame array's storage for the next packet.
    mutating func clear() {
        assembled.frames.removeAll(keepingCapacity: true)
        assembled.keyframeNeeded = false
        newlyMissing = false
        roundTripSample = nil
    }
}

/// One received media SSRC: packets in any order (and retransmissions) become frames in order.
/// Out-of-order packets are held until the gap before them fills or is given up; gaps are
/// NACKed (when allowed); what is given up is lost, and video then asks for a keyframe.
final class ReceiveStream {
    let ssrc: UInt32
    let mid: String
    let sender: String
    let kind: MediaKind
    private(set) var codec: ReceiveCodec
    private(set) var counters = ReceiveCounters()
    private(set) var statistics: ReceptionStatistics
    private(set) var lastArrival: MonotonicTime
    private(set) var register: NackRegister
    private(set) var assembler: FrameAssembler

    private var unwrapper = SequenceUnwrapper(bits: 16)
    private var nextExpected: Int64?
    private var highest: Int64?
    private var held: [Int64: RTPPacket] = [:]
    private var heldBytes = 0
    private var lossBeforeNext = false
    /// The video orientation extension's id, and the rotation it last said (libwebrtc tags
    /// every keyframe and every frame while turned; a frame without the tag keeps the last one).
    private let orientationExtensionID: UInt8?
    private var quarterTurns: UInt8?
    /// Recently given-up ranges, to tell a late arrival from a duplicate.
    private var givenUp: [ClosedRange<Int64>] = []
    /// Consecutive packets far behind the stream: a sender that restarted its numbering.
    private var farBehindRun = 0
    private var lastFarBehind: Int64?
    private var lastKeyframeRequest: MonotonicTime?
    private var fullIntraRequestSequence: UInt8 = 0
    /// The first packet of the earliest whole keyframe held behind a gap, if any.
    private var heldKeyframe: Int64?
    /// When a retransmission last filled a gap: a sender that answers some NACKs is waited for.
    private var lastRecovery: MonotonicTime?
    /// The RTP timestamp of the highest packet: where an overload pause draws its line.
    private(set) var latestTimestamp: UInt32?
    /// Paused for overload: newer pictures are dropped before they reach the stream.
    private(set) var paused = false
    /// Resumed after a pause: the gap before the next new packet is what was shed, not loss,
    /// so it is skipped (no NACK) and the stream waits for a keyframe.
    private var skipNextGap = false
    /// A new video stream delivers nothing before this (see `startReorderNanoseconds`).
    private var startingUntil: MonotonicTime?

    /// A new video stream whose first packet does not begin a keyframe holds its packets this
    /// long before it delivers any: the first packet received is often not the first sent (30 ms
    /// of jitter reorders a keyframe's packets, and the next frame's first packet can overtake
    /// them), and a keyframe taken for the past cost a keyframe request and several frames.
    /// Earlier packets that come in this window move the start back.
    static let startReorderNanoseconds: Int64 = 50_000_000
    /// How far back the start may move (a keyframe's packets, with room to spare).
    static let maximumStartExtension: Int64 = 512
    static let maximumHeldPackets = 2_048
    static let maximumHeldBytes = 8 << 20
    /// Between two keyframe requests of a stream. A libwebrtc sender ignores a request within
    /// 300 ms of the last one it heeded (someone else's: Janus asks as each subscriber starts),
    /// so a request can be lost that way; libwebrtc's own receiver repeats after 200 ms too.
    static let keyframeRequestInterval: Int64 = 200_000_000
    static let restartAfterPackets = 8
    /// NACKs of a gap's oldest packet, unanswered, before a keyframe is asked for while NACK
    /// goes on (with a short round trip: about 130 ms after the loss).
    static let keyframeAfterUnansweredNacks = 3
    /// The same while the sender has never resent anything on this stream: one retry interval
    /// without an answer is enough (Janus keeps no copies in a subscription's first second, and
    /// each loss there cost ~10 frames waiting for the third NACK; now ~4).
    static let keyframeAfterUnansweredNacksBeforeAnyResend = 2
    /// NACKs of a gap's oldest packet, unanswered, before the gap is skipped for a keyframe held after it.
    static let skipAfterUnansweredNacks = 2
    /// How long a gap of a sender that does resend goes unanswered before it counts as lost for
    /// good: past Janus's 200 ms repeat filter and two more NACKs at the 110 ms spacing.
    static let unansweredGapNanoseconds: Int64 = 450_000_000

    init(ssrc: UInt32, track: ReceiveTrack, codec: ReceiveCodec, depacketizer: any Depacketizer, policy: RecoveryPolicy, now: MonotonicTime) {
        self.ssrc = ssrc
        self.mid = track.mid
        self.sender = track.senderKey
        self.kind = track.kind
        self.codec = codec
        var policy = policy
        policy.nackEnabled = policy.nackEnabled && codec.feedback.nack
        register = NackRegister(policy: policy)
        statistics = ReceptionStatistics(clockRate: codec.clockRate)
        assembler = FrameAssembler(depacketizer: depacketizer, isVideo: track.kind == .video)
        orientationExtensionID = track.videoOrientationExtensionID
        quarterTurns = orientationExtensionID != nil ? 0 : nil
        lastArrival = now
    }

    var nackEnabled: Bool { register.policy.nackEnabled }

    // MARK: - Packets

    /// Into an output the caller reuses (cleared first), so its frame array keeps its storage.
    func receive(_ packet: RTPPacket, isRetransmission: Bool, arrival: MonotonicTime, into output: inout StreamOutput) {
        output.clear()
        lastArrival = arrival
        let sequence = unwrapper.unwrap(UInt32(packet.sequenceNumber))
        guard let next = nextExpected, let top = highest else {
            nextExpected = sequence
            highest = sequence
            latestTimestamp = packet.timestamp
            if kind == .video && !isRetransmission && !assembler.depacketizer.isKeyframeStart(packet.payload) {
                startingUntil = arrival.adding(nanoseconds: Self.startReorderNanoseconds)
            }
            accept(packet, sequence: sequence, isRetransmission: isRetransmission, arrival: arrival, &output)
            return
        }
        if let until = startingUntil, arrival >= until { endStart(&output) }
        if sequence < next {
            if startingUntil != nil && !isRetransmission && moveStart(back: sequence, from: next, arrival: arrival) {
                accept(packet, sequence: sequence, isRetransmission: false, arrival: arrival, &output)
                return
            }
            behind(sequence, next: next, isRetransmission: isRetransmission, packet: packet, arrival: arrival, &output)
            return
        }
        farBehindRun = 0
        if held[sequence] != nil {
            counters.duplicates += 1
            return
        }
        // A retransmission only fills a gap we know of: one for a packet never missed (or beyond
        // anything sent) would let a sender move the stream, so it is counted and dropped.
        if isRetransmission && (sequence > top || !register.contains(sequence)) {
            counters.unexpectedRetransmissions += 1
            return
        }
        if sequence > top {
            latestTimestamp = packet.timestamp
            if sequence > top + 1 {
                let gap = (top + 1)..<sequence
                if gap.count > register.policy.maximumMissingPackets || (skipNextGap && !isRetransmission) {
                    skipNextGap = false
                    jump(to: sequence, &output)
                    accept(packet, sequence: sequence, isRetransmission: isRetransmission, arrival: arrival, &output)
                    return
                }
                // A small gap while the register is full: the oldest gaps are given up to make room.
                let room = register.policy.maximumMissingPackets - gap.count
                if register.count > room, let oldest = register.entries.dropFirst(register.count - room - 1).first?.sequence {
                    giveUp(through: oldest, &output)
                }
                _ = register.markMissing(gap, now: arrival)
                output.newlyMissing = true
            }
            if !isRetransmission { skipNextGap = false }
            highest = sequence
        } else if let entry = register.arrived(sequence) {
            // Only RTX can be told apart from reordering: a late packet on its own SSRC may be a
            // plain resend or just late (senders without RTX resend plainly).
            if isRetransmission {
                counters.recovered += 1
                lastRecovery = arrival
                if entry.nacks == 1, let asked = entry.lastNack { output.roundTripSample = arrival.nanoseconds - asked.nanoseconds }
            } else {
                counters.reordered += 1
                // Late, not resent: before any NACK it can only be reordering; after one, only
                // when the sender resends on RTX (a plain resend would look like reordering and
                // push the wait up by a round trip each time).
                if entry.nacks == 0 || lastRecovery != nil { register.reordered(entry, now: arrival) }
            }
        } else {
            counters.duplicates += 1  // between delivered and highest, neither held nor missing
            return
        }
        accept(packet, sequence: sequence, isRetransmission: isRetransmission, arrival: arrival, &output)
        skipToHeldKeyframe(now: arrival, &output)
    }

    private func accept(_ packet: RTPPacket, sequence: Int64, isRetransmission: Bool, arrival: MonotonicTime, _ output: inout StreamOutput) {
        counters.packets += 1
        if !isRetransmission { statistics.record(sequence: sequence, rtpTimestamp: packet.timestamp, arrival: arrival) }
        if sequence == nextExpected && startingUntil == nil {
            deliver(packet, &output)
            nextExpected = sequence + 1
            drain(&output)
            return
        }
        held[sequence] = packet
        heldBytes += packet.bytes.count
        if kind == .video, heldKeyframe.map({ sequence < $0 }) ?? true,
           let start = HeldKeyframe.start(around: sequence, held: { self.held[$0] }, depacketizer: assembler.depacketizer) {
            heldKeyframe = start
        }
        if held.count > ReceiveStream.maximumHeldPackets || heldBytes > ReceiveStream.maximumHeldBytes,
           let oldestMissing = register.entries.first?.sequence {
            giveUp(through: oldestMissing, &output)
        }
    }

    /// A packet from before the first one, while the stream starts: the start moves back to it,
    /// and what lies between is missing like any gap. False when it is too far back.
    private func moveStart(back sequence: Int64, from next: Int64, arrival: MonotonicTime) -> Bool {
        guard next - sequence <= Self.maximumStartExtension,
              register.markMissing(before: (sequence + 1)..<next, now: arrival) else { return false }
        nextExpected = sequence
        statistics.extendBase(to: sequence)
        return true
    }

    /// The start window is over: what is held from the (earliest) first packet on goes out.
    private func endStart(_ output: inout StreamOutput) {
        startingUntil = nil
        drain(&output)
    }

    /// A packet older than the next one expected: a duplicate, one that came after it was given
    /// up, or (many in a row, far behind) a sender that restarted its numbering.
    private func behind(_ sequence: Int64, next: Int64, isRetransmission: Bool, packet: RTPPacket, arrival: MonotonicTime,
                        _ output: inout StreamOutput) {
        if next - sequence > Int64(register.policy.maximumMissingPackets) {
            farBehindRun = lastFarBehind == sequence - 1 ? farBehindRun + 1 : 1
            lastFarBehind = sequence
            if farBehindRun >= ReceiveStream.restartAfterPackets && !isRetransmission {
                let restarted = restart(at: sequence, &output)
                accept(packet, sequence: restarted, isRetransmission: false, arrival: arrival, &output)
                return
            }
        }
        if givenUp.contains(where: { $0.contains(sequence) }) {
            counters.lateArrivals += 1
            // RFC 3550 A.3 counts late packets as received (the sender hears less loss).
            if !isRetransmission { statistics.record(sequence: sequence, rtpTimestamp: packet.timestamp, arrival: arrival) }
        } else {
            counters.duplicates += 1
        }
    }

    // MARK: - Loss

    /// Gives up what has waited too long; returns frames that were waiting behind it.
    func handleTimeout(now: MonotonicTime) -> StreamOutput {
        var output = StreamOutput()
        if let until = startingUntil, now >= until { endStart(&output) }
        if let last = register.expired(now: now) { giveUp(through: last, &output) }
        skipToHeldKeyframe(now: now, &output)
        return output
    }

    /// The gap's NACKs have gone unanswered long enough to ask for a keyframe as well.
    func gapOutlastsNacks(now: MonotonicTime) -> Bool {
        let nacks = lastRecovery == nil ? ReceiveStream.keyframeAfterUnansweredNacksBeforeAnyResend : ReceiveStream.keyframeAfterUnansweredNacks
        return kind == .video && oldestGapUnanswered(after: nacks, now: now)
    }

    /// The oldest missing packet has been NACKed `nacks` times (the last at least the reorder
    /// wait ago) and no retransmission at all has
    /// come since it went missing, from a sender that has never resent anything on this stream
    /// (Janus before it knows the round trip), or for `unansweredGapNanoseconds` (the sender's
    /// copy is gone). A sender that answers but had one answer lost ignores repeats for a while
    /// (Janus: 200 ms) and then answers again: that gap is not given up early.
    private func oldestGapUnanswered(after nacks: Int, now: MonotonicTime) -> Bool {
        guard let oldest = register.entries.first, oldest.nacks >= nacks else { return false }
        // On a path that reorders, the answer to the last NACK is as late as the path makes it.
        if let asked = oldest.lastNack, now.nanoseconds - asked.nanoseconds < register.reorder.wait(now: now) { return false }
        guard let lastRecovery else { return true }
        return lastRecovery < oldest.firstMissing
            && now.nanoseconds - oldest.firstMissing.nanoseconds >= ReceiveStream.unansweredGapNanoseconds
    }

    /// Gives up an unanswered gap when a whole keyframe is held after it: what lies between
    /// could only be decoded if the gap were repaired, and the keyframe decodes without it.
    func skipToHeldKeyframe(now: MonotonicTime, _ output: inout StreamOutput) {
        guard let key = heldKeyframe else { return }
        guard let next = nextExpected, key > next, let oldest = register.entries.first?.sequence, oldest < key else {
            heldKeyframe = nil  // delivered already, or no gap before it any more
            return
        }
        guard oldestGapUnanswered(after: ReceiveStream.skipAfterUnansweredNacks, now: now) else { return }
        counters.gapsSkippedToKeyframe += 1
        heldKeyframe = nil
        giveUp(through: key - 1, &output)
    }

    /// Sequence numbers to NACK now.
    func dueNacks(now: MonotonicTime, retryInterval: Int64, budget: inout FeedbackBudget) -> [UInt16] {
        let due = register.due(now: now, retryInterval: retryInterval, budget: &budget)
        counters.nackedSequenceNumbers += due.count
        return due.map { UInt16(truncatingIfNeeded: $0) }
    }

    func nextDeadline(retryInterval: Int64) -> MonotonicTime? {
        let recovery = register.nextDeadline(retryInterval: retryInterval)
        guard let startingUntil else { return recovery }
        return min(recovery ?? startingUntil, startingUntil)
    }

    /// The stream has a deadline of its own (gaps to recover, or its start window).
    var needsTimer: Bool { !register.isEmpty || startingUntil != nil }

    private func giveUp(through last: Int64, _ output: inout StreamOutput) {
        guard let next = nextExpected, last >= next else { return }
        counters.lost += register.removeThrough(last)
        givenUp.append(next...last)
        if givenUp.count > 64 { givenUp.removeFirst(givenUp.count - 64) }
        var sequence = next
        while sequence <= last {
            if let packet = held.removeValue(forKey: sequence) {
                heldBytes -= packet.bytes.count
                deliver(packet, &output)
            } else {
                lossBeforeNext = true
            }
            sequence += 1
        }
        nextExpected = last + 1
        drain(&output)
    }

    /// A gap too large to recover: what is held goes out in order, numbering continues at `sequence`.
    private func jump(to sequence: Int64, _ output: inout StreamOutput) {
        counters.sequenceJumps += 1
        flushHeld(&output)
        register.removeAll()
        heldKeyframe = nil
        lossBeforeNext = true
        nextExpected = sequence
        highest = sequence
        statistics.restart(at: sequence)
    }

    /// The sender restarted its sequence numbers: start over from `sequence`. Returns its new
    /// extended number (the unwrapper starts afresh).
    private func restart(at sequence: Int64, _ output: inout StreamOutput) -> Int64 {
        counters.sequenceJumps += 1
        flushHeld(&output)
        register.removeAll()
        heldKeyframe = nil
        givenUp.removeAll()
        farBehindRun = 0
        lossBeforeNext = true
        unwrapper.reset()
        let restarted = unwrapper.unwrap(UInt32(UInt16(truncatingIfNeeded: sequence)))
        nextExpected = restarted
        highest = restarted
        statistics.restart(at: restarted)
        return restarted
    }

    private func flushHeld(_ output: inout StreamOutput) {
        for sequence in held.keys.sorted() {
            if let packet = held[sequence] {
                if sequence != nextExpected { lossBeforeNext = true }
                deliver(packet, &output)
                nextExpected = sequence + 1
            }
        }
        held.removeAll()
        heldBytes = 0
    }

    private func drain(_ output: inout StreamOutput) {
        while let next = nextExpected, !held.isEmpty, let packet = held.removeValue(forKey: next) {
            heldBytes -= packet.bytes.count
            deliver(packet, &output)
            nextExpected = next + 1
        }
    }

    private func deliver(_ packet: RTPPacket, _ output: inout StreamOutput) {
        // Padding-only packets (bandwidth probes without RTX) fill a sequence number, nothing else;
        // a loss before one still belongs to the next real packet.
        guard !packet.payloadRange.isEmpty else { return }
        if let id = orientationExtensionID, let value = packet.headerExtension(id), let byte = value.first {
            quarterTurns = byte & 0x03  // the low two bits: R1 R0 (C and F, camera and flip, are not kept)
        }
        let before = output.assembled.frames.count
        assembler.push(packet, afterLoss: lossBeforeNext, &output.assembled)
        lossBeforeNext = false
        if let quarterTurns {
            for index in before..<output.assembled.frames.count { output.assembled.frames[index].quarterTurns = quarterTurns }
        }
    }

    /// The stream ends (BYE, its section went away): what it holds goes out, gaps given up.
    func drainForEnd() -> AssemblerOutput {
        var output = StreamOutput()
        if let top = highest { giveUp(through: top, &output) }
        var discarded = AssemblerOutput()
        assembler.abandon(&discarded)  // a half-collected frame cannot complete now
        output.assembled.keyframeNeeded = false
        return output.assembled
    }

    /// Bytes held for reordering and in the frame being collected.
    var bufferedBytes: Int { heldBytes + assembler.collectedBytes }

    /// Over the receiver's memory budget: give up the oldest gap, or else the frame being collected.
    func shed(_ output: inout StreamOutput) {
        if let oldest = register.entries.first?.sequence {
            giveUp(through: oldest, &output)
        } else {
            assembler.abandon(&output.assembled)
        }
    }

    // MARK: - Overload pauses

    /// Pauses the stream: pictures newer than the returned timestamp (the highest packet's)
    /// will be dropped before they arrive, so the last picture taken in can still complete.
    func pause(now: MonotonicTime) -> UInt32? {
        guard !paused, let boundary = latestTimestamp else { return nil }
        paused = true
        lastArrival = now
        counters.overloadPauses += 1
        return boundary
    }

    /// Resumes after a pause: the gap is skipped and the stream waits for a keyframe (the
    /// caller asks for one).
    func resume(now: MonotonicTime) {
        guard paused else { return }
        paused = false
        skipNextGap = true
        lastArrival = now
    }

    // MARK: - Codec changes and downstream loss

    /// The same codec under another payload type.
    func renumber(_ codec: ReceiveCodec) { self.codec = codec }

    func switchCodec(to codec: ReceiveCodec, depacketizer: any Depacketizer) -> AssemblerOutput {
        var output = AssemblerOutput()
        self.codec = codec
        assembler.switchCodec(to: depacketizer, &output)
        return output
    }

    func frameLostDownstream(rtpTimestamp: UInt32) -> AssemblerOutput {
        var output = AssemblerOutput()
        assembler.frameLostDownstream(rtpTimestamp: rtpTimestamp, &output)
        return output
    }

    // MARK: - Keyframe requests

    /// The RTCP request for a keyframe, when one is needed and allowed now (rate-limited;
    /// never while NACK may still repair the loss, because only a given-up loss asks).
    /// `wanted`: asked for although nothing was lost (a split part must start at a keyframe).
    func keyframeRequest(localSSRC: UInt32, now: MonotonicTime, budget: inout FeedbackBudget, wanted: Bool = false) -> RTCPPacket? {
        guard kind == .video, assembler.waitingForKeyframe || wanted || gapOutlastsNacks(now: now), codec.feedback.canRequestKeyframe else { return nil }
        if let last = lastKeyframeRequest, now.nanoseconds - last.nanoseconds < ReceiveStream.keyframeRequestInterval { return nil }
        guard budget.allowKeyframeRequest(now: now) else { return nil }
        lastKeyframeRequest = now
        if codec.feedback.pictureLossIndication {
            counters.pictureLossIndications += 1
            return .pictureLossIndication(sender: localSSRC, media: ssrc)
        }
        counters.fullIntraRequests += 1
        fullIntraRequestSequence &+= 1
        return .fullIntraRequest(sender: localSSRC, media: ssrc, sequence: fullIntraRequestSequence)
    }

    /// The stream's counters, with the assembler's frame counts and the current jitter.
    var currentCounters: ReceiveCounters {
        var result = counters
        result.framesEmitted = assembler.framesEmitted
        result.framesDropped = assembler.dropped
        result.jitterMilliseconds = statistics.jitterMilliseconds
        return result
    }

    func senderReport(ntpTimestamp: UInt64, arrival: MonotonicTime) { statistics.senderReport(ntpTimestamp: ntpTimestamp, arrival: arrival) }

    /// RFC 3550 §6.4: a block only for a source heard from since the last report.
    func reportBlock(now: MonotonicTime) -> RTCPReportBlock? {
        guard statistics.heardSinceLastReport else { return nil }
        return statistics.reportBlock(ssrc: ssrc, now: now)
    }

    /// The block that leads this stream's feedback: sent even when nothing was heard since the
    /// last report, because it is what tells the sender which stream the feedback is for.
    func feedbackReportBlock(now: MonotonicTime) -> RTCPReportBlock { statistics.reportBlock(ssrc: ssrc, now: now) }
}
