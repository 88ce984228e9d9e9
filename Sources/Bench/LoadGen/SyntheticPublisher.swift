import RTP
import WireCoding

/// What one synthetic publisher sent, for the ground-truth file.
public struct PublisherCounts: Sendable, Codable, Equatable {
    public var videoFrames = 0
    public var audioFrames = 0
    public var keyframes = 0
    public var packets = 0
    public var bytes = 0
    /// First transmissions the seeded loss dropped on purpose.
    public var packetsDropped = 0
    /// Packets sent after the one that followed them (the faults below), and sent twice.
    public var packetsReordered = 0
    public var packetsDuplicated = 0
    /// Windows in which the publisher sent at ten times its rate.
    public var bursts = 0
    public var retransmissions = 0
    /// NACKed packets no longer in the history.
    public var retransmissionsMissed = 0
    /// Retransmissions the bursty loss on the path dropped.
    public var retransmissionsDropped = 0
    public var keyframeRequests = 0
}

/// Damage done to a publisher's packets, seeded. The uniform loss, reordering and duplicates
/// touch first transmissions only; the bursty loss and the jitter are the path's, so RTX meets
/// them too.
public struct PacketFaults: Sendable, Equatable {
    public var lossPercent = 0.0
    /// A packet held back and sent after the next one.
    public var reorderPercent = 0.0
    /// A packet sent twice in a row.
    public var duplicatePercent = 0.0
    /// Gilbert–Elliott loss: this average share of all packets, in bursts of about `burstLength`
    /// (a good state that drops nothing, a bad one that drops everything).
    public var burstLossPercent = 0.0
    public var burstLength = 4.0
    /// Each packet waits a seeded random 0..<this before it leaves, so packets reorder.
    public var jitterNanoseconds: Int64 = 0

    public init(lossPercent: Double = 0, reorderPercent: Double = 0, duplicatePercent: Double = 0,
                burstLossPercent: Double = 0, burstLength: Double = 4, jitterNanoseconds: Int64 = 0) {
        self.lossPercent = lossPercent
        self.reorderPercent = reorderPercent
        self.duplicatePercent = duplicatePercent
        self.burstLossPercent = burstLossPercent
        self.burstLength = burstLength
        self.jitterNanoseconds = jitterNanoseconds
    }

    /// The chain's transition probabilities: good → bad, and bad → good.
    var burstTransitions: (enter: Double, leave: Double)? {
        guard burstLossPercent > 0 else { return nil }
        let average = min(burstLossPercent, 99) / 100, leave = 1 / max(1, burstLength)
        return (average * leave / (1 - average), leave)
    }
}

/// One publisher replaying the clip in a loop: RTP sequence numbers and timestamps run on
/// across loops, a keyframe request restarts the video at the clip's first keyframe, and a
/// NACK is answered from a history of recent packets with RTX (RFC 4588). Sans-IO: `due(now:)`
/// returns what is due to be sent; pacing belongs to the caller.
public final class SyntheticPublisher {
    public struct SSRCs: Sendable, Equatable {
        public var audio: UInt32, video: UInt32, rtx: UInt32
    }

    public static let opusPayloadType: UInt8 = 111
    public static let vp8PayloadType: UInt8 = 96
    public static let rtxPayloadType: UInt8 = 97
    static let historySize = 1_024

    public let connectionID: String
    public let ssrcs: SSRCs
    public private(set) var startedAt: MonotonicTime
    public private(set) var counts = PublisherCounts()
    /// Frames by how late they went out against their schedule (1 ms buckets; the last is 100 ms or more).
    public private(set) var lagHistogram = [Int](repeating: 0, count: 101)
    /// Stopped: sends nothing more (left, or vanished).
    public var stopped = false
    /// False: the video track is offered and reported (SRs) but sends no packets, as if every
    /// video stream were paused; what the bench measures audio's own cost with.
    public var sendsVideo = true
    /// A frame as it left: its RTP timestamp, the schedule instant it was captured at, its bytes.
    public struct SentFrame: Sendable {
        public var isVideo: Bool
        public var rtpTimestamp: UInt32
        public var capturedAt: MonotonicTime
        public var data: [UInt8]
    }
    /// Every frame sent, when the caller asks for the log (nil: not kept; the bench never keeps it).
    public var sentFrames: [SentFrame]?

    private let clip: MediaClip
    private let faults: PacketFaults
    /// A packet the reordering holds back until the next one has gone.
    private var heldBack: [UInt8]?
    /// The path's bursty loss is in its bad state.
    private var pathIsBad = false
    /// Packets the jitter holds, with when they leave (monotonic ns).
    private var delayed: [(due: Int64, packet: [UInt8])] = []
    /// The wall clock of the call in progress (what the jitter delays from).
    private var clock: Int64 = 0
    /// A burst: from `start` until `end` (monotonic ns) the schedule runs `factor` times as fast,
    /// reaching `scheduleEnd` at `end`.
    private var burst: (start: Int64, end: Int64, factor: Int64, scheduleEnd: Int64)?
    private var random: SplitMix64
    private var videoIndex = 0, audioIndex = 0
    private var nextVideo: Int64, nextAudio: Int64  // schedule, monotonic ns
    private var videoSequence: UInt16, audioSequence: UInt16, rtxSequence: UInt16
    private let videoTimestampBase: UInt32, audioTimestampBase: UInt32
    private var pictureID: UInt16 = 0
    private var keyframeRequested = false
    private var lastKeyframeRestart: Int64?
    /// Recent video packets by sequence number (mod the size), for RTX.
    private var history: [[UInt8]?]
    private var nextReport: Int64
    private var ntpBase: (monotonic: Int64, ntp: UInt64)

    public init(connectionID: String, ssrcs: SSRCs, clip: MediaClip, startedAt: MonotonicTime, wallClockNTP: UInt64,
                faults: PacketFaults = PacketFaults(), seed: UInt64 = 1) {
        self.connectionID = connectionID
        self.ssrcs = ssrcs
        self.clip = clip
        self.startedAt = startedAt
        self.faults = faults
        random = SplitMix64(seed: seed)
        nextVideo = startedAt.nanoseconds
        nextAudio = startedAt.nanoseconds
        videoSequence = UInt16.random(in: 0...UInt16.max, using: &random)
        audioSequence = UInt16.random(in: 0...UInt16.max, using: &random)
        rtxSequence = UInt16.random(in: 0...UInt16.max, using: &random)
        videoTimestampBase = UInt32.random(in: 0...UInt32.max, using: &random)
        audioTimestampBase = UInt32.random(in: 0...UInt32.max, using: &random)
        history = Array(repeating: nil, count: Self.historySize)
        nextReport = startedAt.nanoseconds + 500_000_000
        ntpBase = (startedAt.nanoseconds, wallClockNTP)
    }

    /// Moves the whole schedule to start at `start` (before anything was sent): publishers wait
    /// for the transport, and an arriving one for the recorder's re-answer, as an SFU forwards
    /// nothing to a subscriber that cannot route it yet.
    public func reschedule(startingAt start: MonotonicTime, wallClockNTP: UInt64) {
        guard counts.packets == 0 else { return }
        startedAt = start
        nextVideo = start.nanoseconds
        nextAudio = start.nanoseconds
        nextReport = start.nanoseconds + 500_000_000
        ntpBase = (start.nanoseconds, wallClockNTP)
    }

    /// When the next frame (or sender report) is due.
    public var nextDeadline: MonotonicTime? {
        guard !stopped else { return nil }
        let scheduled = min(nextVideo, nextAudio, nextReport, delayed.first?.due ?? .max)
        // In a burst the schedule runs fast: its instant t is due at start + (t - start) / factor.
        if let burst, scheduled < burst.scheduleEnd {
            return MonotonicTime(nanoseconds: burst.start + max(0, scheduled - burst.start) / burst.factor)
        }
        return MonotonicTime(nanoseconds: scheduled)
    }

    /// For `seconds` from `now` the publisher sends `factor` times its media rate, as a sender
    /// (or a queue in the network) catching up after a stall would; then it is silent until the
    /// wall clock reaches its schedule again. Timestamps stay those of the schedule.
    public func startBurst(now: MonotonicTime, seconds: Double, factor: Int = 10) {
        guard !stopped, burst == nil else { return }  // one at a time: the last one has caught up
        let length = Int64(seconds * 1e9), speed = Int64(max(1, factor))
        burst = (now.nanoseconds, now.nanoseconds + length, speed, now.nanoseconds + length * speed)
        counts.bursts += 1
    }

    /// The schedule instant that `now` has reached: ahead of it once a burst has begun; after
    /// the window it stays at the window's end until the wall clock catches up.
    private func scheduleTime(_ now: Int64) -> Int64 {
        guard let burst, now >= burst.start else { return now }
        return max(now, burst.start + (min(now, burst.end) - burst.start) * burst.factor)
    }

    /// Appends the RTP and RTCP (plain, not yet protected) due by `now`.
    public func due(now wallNow: MonotonicTime, rtp: inout [[UInt8]], rtcp: inout [[UInt8]]) {
        guard !stopped else { return }
        clock = wallNow.nanoseconds
        let now = MonotonicTime(nanoseconds: scheduleTime(wallNow.nanoseconds))
        if now == wallNow, let burst, wallNow.nanoseconds >= burst.end { self.burst = nil }  // caught up
        while nextAudio <= now.nanoseconds {
            noteLag(wallNow.nanoseconds - nextAudio)
            sendAudio(into: &rtp)
        }
        while nextVideo <= now.nanoseconds {
            guard sendsVideo else {
                nextVideo += max(1, clip.video[videoIndex].durationNanoseconds)
                videoIndex = (videoIndex + 1) % clip.video.count
                continue
            }
            noteLag(wallNow.nanoseconds - nextVideo)
            sendVideo(into: &rtp)
        }
        while nextReport <= now.nanoseconds {
            rtcp.append(senderReports(at: nextReport))
            nextReport += 1_000_000_000
        }
        while let first = delayed.first, first.due <= wallNow.nanoseconds {
            rtp.append(first.packet)
            delayed.removeFirst()
        }
    }

    /// Nothing was forwarded until `now` (the recorder was away): the schedule moves on to the
    /// present without sending, the clip with it, as a live source does. Timestamps keep the
    /// schedule's clock, so the gap is as long as it was; sequence numbers go on from the last sent.
    public func skip(to now: MonotonicTime) {
        while nextAudio <= now.nanoseconds {
            nextAudio += clip.audio[audioIndex].durationNanoseconds
            audioIndex = (audioIndex + 1) % clip.audio.count
        }
        while nextVideo <= now.nanoseconds {
            nextVideo += clip.video[videoIndex].durationNanoseconds
            videoIndex = (videoIndex + 1) % clip.video.count
        }
        while nextReport <= now.nanoseconds { nextReport += 1_000_000_000 }
        delayed.removeAll()
        heldBack = nil
    }

    /// PLI or FIR: the next video frame restarts the clip at its first keyframe (at most every 300 ms).
    public func requestKeyframe() {
        counts.keyframeRequests += 1
        keyframeRequested = true
    }

    /// RTX for the NACKed sequence numbers still in the history.
    public func retransmit(_ sequenceNumbers: [UInt16], now: MonotonicTime, into rtp: inout [[UInt8]]) {
        clock = now.nanoseconds
        for sequence in sequenceNumbers {
            guard let original = history[Int(sequence) % Self.historySize], original.count > 12,
                  UInt16(original[2]) << 8 | UInt16(original[3]) == sequence
            else {
                counts.retransmissionsMissed += 1
                continue
            }
            var builder = RTPPacketBuilder(payloadType: Self.rtxPayloadType, sequenceNumber: rtxSequence, timestamp: 0, ssrc: ssrcs.rtx)
            builder.marker = original[1] & 0x80 != 0
            builder.timestamp = UInt32(original[4]) << 24 | UInt32(original[5]) << 16 | UInt32(original[6]) << 8 | UInt32(original[7])
            rtxSequence &+= 1
            counts.retransmissions += 1
            if pathDrops() {
                counts.retransmissionsDropped += 1
                continue
            }
            leave(builder.build(payload: [original[2], original[3]] + original[12...]), into: &rtp)
        }
    }

    // MARK: - Sending

    private func noteLag(_ nanoseconds: Int64) {
        lagHistogram[Int(min(100, max(0, nanoseconds / 1_000_000)))] += 1
    }

    private func sendAudio(into rtp: inout [[UInt8]]) {
        let frame = clip.audio[audioIndex]
        let timestamp = audioTimestampBase &+ rtpTime(nextAudio, clockRate: 48_000)
        let packet = RTPPacketBuilder(payloadType: Self.opusPayloadType, sequenceNumber: audioSequence, timestamp: timestamp, ssrc: ssrcs.audio)
            .build(payload: frame.data)
        sentFrames?.append(SentFrame(isVideo: false, rtpTimestamp: timestamp, capturedAt: MonotonicTime(nanoseconds: nextAudio), data: frame.data))
        audioSequence &+= 1
        emit(packet, into: &rtp)
        counts.audioFrames += 1
        nextAudio += frame.durationNanoseconds
        audioIndex = (audioIndex + 1) % clip.audio.count
    }

    private func sendVideo(into rtp: inout [[UInt8]]) {
        if keyframeRequested && lastKeyframeRestart.map({ nextVideo - $0 >= 300_000_000 }) ?? true {
            keyframeRequested = false
            lastKeyframeRestart = nextVideo
            videoIndex = 0
        }
        let frame = clip.video[videoIndex]
        let timestamp = videoTimestampBase &+ rtpTime(nextVideo, clockRate: 90_000)
        let payloads = Packetizers.vp8(frame.data, pictureID: pictureID)
        sentFrames?.append(SentFrame(isVideo: true, rtpTimestamp: timestamp, capturedAt: MonotonicTime(nanoseconds: nextVideo), data: frame.data))
        pictureID = (pictureID &+ 1) & 0x7FFF
        for (index, payload) in payloads.enumerated() {
            var builder = RTPPacketBuilder(payloadType: Self.vp8PayloadType, sequenceNumber: videoSequence, timestamp: timestamp, ssrc: ssrcs.video)
            builder.marker = index == payloads.count - 1
            let packet = builder.build(payload: payload)
            history[Int(videoSequence) % Self.historySize] = packet
            videoSequence &+= 1
            emit(packet, into: &rtp)
        }
        counts.videoFrames += 1
        if frame.isKeyframe { counts.keyframes += 1 }
        nextVideo += frame.durationNanoseconds
        videoIndex = (videoIndex + 1) % clip.video.count
    }

    private func emit(_ packet: [UInt8], into rtp: inout [[UInt8]]) {
        counts.packets += 1
        counts.bytes += packet.count
        if faults.lossPercent > 0, Double.random(in: 0..<100, using: &random) < faults.lossPercent {
            counts.packetsDropped += 1
            return
        }
        if pathDrops() {
            counts.packetsDropped += 1
            return
        }
        if faults.reorderPercent > 0, heldBack == nil, Double.random(in: 0..<100, using: &random) < faults.reorderPercent {
            heldBack = packet
            counts.packetsReordered += 1
            return
        }
        leave(packet, into: &rtp)
        if faults.duplicatePercent > 0, Double.random(in: 0..<100, using: &random) < faults.duplicatePercent {
            leave(packet, into: &rtp)
            counts.packetsDuplicated += 1
        }
        if let held = heldBack {
            leave(held, into: &rtp)
            heldBack = nil
        }
    }

    /// One step of the path's Gilbert–Elliott chain: true when this packet is lost.
    private func pathDrops() -> Bool {
        guard let chance = faults.burstTransitions else { return false }
        let draw = Double.random(in: 0..<1, using: &random)
        pathIsBad = pathIsBad ? draw >= chance.leave : draw < chance.enter
        return pathIsBad
    }

    /// On the wire now, or after the jitter's delay (kept in leaving order).
    private func leave(_ packet: [UInt8], into rtp: inout [[UInt8]]) {
        guard faults.jitterNanoseconds > 0 else {
            rtp.append(packet)
            return
        }
        let due = clock + Int64(random.next() % UInt64(faults.jitterNanoseconds))
        let index = delayed.lastIndex { $0.due <= due }.map { $0 + 1 } ?? 0
        delayed.insert((due, packet), at: index)
    }

    /// RTP time of a schedule instant (ticks since the publisher started, wrapping as RTP does).
    private func rtpTime(_ instant: Int64, clockRate: Int64) -> UInt32 {
        let elapsed = instant - startedAt.nanoseconds
        return UInt32(truncatingIfNeeded: elapsed / 1_000_000_000 * clockRate + elapsed % 1_000_000_000 * clockRate / 1_000_000_000)
    }

    /// One SR per media SSRC (RFC 3550 §6.4.1), mapping the schedule's clock to NTP, for A/V sync.
    private func senderReports(at instant: Int64) -> [UInt8] {
        let elapsed = UInt64(max(0, instant - ntpBase.monotonic))
        let ntp = ntpBase.ntp &+ (elapsed / 1_000_000_000) << 32 &+ ((elapsed % 1_000_000_000) << 32) / 1_000_000_000
        let video = RTCPPacket.senderReport(ssrc: ssrcs.video, ntpTimestamp: ntp, rtpTimestamp: videoTimestampBase &+ rtpTime(instant, clockRate: 90_000),
                                            packetCount: UInt32(truncatingIfNeeded: counts.packets), octetCount: UInt32(truncatingIfNeeded: counts.bytes), reports: [])
        let audio = RTCPPacket.senderReport(ssrc: ssrcs.audio, ntpTimestamp: ntp, rtpTimestamp: audioTimestampBase &+ rtpTime(instant, clockRate: 48_000),
                                            packetCount: UInt32(truncatingIfNeeded: counts.audioFrames), octetCount: 0, reports: [])
        return video.serialized + audio.serialized
    }
}
