import Testing
import WireCoding
@testable import Media

/// A sender on a simulated clock: Opus every 20 ms and video at 30 fps, captured on the
/// sender's clock (which may run `ppm` fast against ours), delayed on the way by a base delay
/// plus seeded jitter (delivery stays in RTP order, as the frame assembler delivers it), with
/// SRs every second stamped the way aiortc stamps them: the NTP time of the report with the
/// RTP time of the last frame sent, not the RTP time at that instant.
struct SimulatedSender {
    var ssrcs = (video: UInt32(1), audio: UInt32(3))
    var ppm = 0.0
    var delay: (video: Int64, audio: Int64) = (10_000_000, 10_000_000)
    var jitter: Int64 = 0
    var rtpBase = (video: UInt32(4_000_000_000), audio: UInt32(123_456))
    /// Sender NTP nanoseconds when its media clock reads 0.
    var ntpBase: Int64 = 3_900_000_000_000_000_000
    /// Local time of the sender's capture 0.
    var localStart: Int64 = 1_000_000_000
    /// Audio is not sent (DTX) between these sender times (ns).
    var silence: Range<Int64>?
    var senderReports = true
    /// The first SR is sent at this second of the sender's clock.
    var reportsFrom: Int64 = 1
    /// libwebrtc's pattern instead: SRs that map the RTP clock at their own NTP instant, video
    /// every second from 0.5 s and audio every 5 s from `firstAudioReport`, and video frames
    /// captured every 33 ms ± up to this much (its RTP time is the capture time, off any grid).
    var libwebrtc: (firstAudioReport: Int64, captureJitter: Int64)?
    /// Frames captured before `until` (sender time) take `extra` longer on the way.
    var slowStart: (until: Int64, extra: Int64)?
    /// Video starts at this sender time (a camera turned on), its SRs with it.
    var videoFrom: Int64 = 0
    /// SRs take this long on the way instead of their stream's delay (RTCP is not paced).
    var reportDelay: Int64?
    var seed: UInt64 = 7

    enum Event {
        case frame(ReceivedFrame, captureLocal: Int64)
        case report(ssrc: UInt32, ntp: UInt64, rtp: UInt32, arrival: Int64)

        var at: Int64 {
            switch self {
            case .frame(let frame, _): frame.completedAt.nanoseconds
            case .report(_, _, _, let arrival): arrival
            }
        }
    }

    /// The local time of a sender-clock instant.
    func local(_ senderTime: Int64) -> Int64 { localStart + Int64((Double(senderTime) / (1 + ppm / 1e6)).rounded()) }

    static func ntp(_ nanoseconds: Int64) -> UInt64 {
        UInt64(nanoseconds / 1_000_000_000) << 32 | UInt64((nanoseconds % 1_000_000_000) << 32 / 1_000_000_000)
    }

    func events(seconds: Int64, sender: String = "S") -> [Event] {
        var random = SplitMix64(seed: seed)
        var events: [Event] = []
        func stream(ssrc: UInt32, kind: MediaKind, base: UInt32, ticks: Int64, rate: Int64, delay: Int64) {
            var lastArrival: Int64 = .min
            let count = seconds * rate / ticks
            for index in 0..<count {
                var senderTime = index * ticks * 1_000_000_000 / rate
                if kind == .video, let libwebrtc, libwebrtc.captureJitter > 0 {
                    senderTime += Int64(random.next() % UInt64(libwebrtc.captureJitter))
                }
                if kind == .audio, let silence, silence.contains(senderTime) { continue }
                if kind == .video && senderTime < videoFrom { continue }
                let capture = local(senderTime)
                var jitter = self.jitter > 0 ? Int64(random.next() % UInt64(self.jitter)) : 0
                if let slowStart, senderTime < slowStart.until { jitter += slowStart.extra }
                lastArrival = max(lastArrival, capture + delay + jitter)
                let rtp = base &+ UInt32(truncatingIfNeeded: senderTime * rate / 1_000_000_000)
                let frame = ReceivedFrame(ssrc: ssrc, sender: sender, kind: kind, codec: kind == .video ? "VP8" : "OPUS",
                                          frame: EncodedFrame(data: [0], rtpTimestamp: rtp, isKeyframe: true),
                                          mediaTime: MonotonicTime(nanoseconds: 0), completedAt: MonotonicTime(nanoseconds: lastArrival))
                events.append(.frame(frame, captureLocal: capture))
            }
            guard senderReports else { return }
            if let libwebrtc {
                let (first, every): (Int64, Int64) = kind == .video ? (500_000_000, 1_000_000_000) : (libwebrtc.firstAudioReport, 5_000_000_000)
                for senderTime in stride(from: first, to: seconds * 1_000_000_000, by: Int(every)) {
                    events.append(.report(ssrc: ssrc, ntp: Self.ntp(ntpBase + senderTime),
                                          rtp: base &+ UInt32(truncatingIfNeeded: senderTime * rate / 1_000_000_000), arrival: local(senderTime) + delay))
                }
                return
            }
            for second in reportsFrom..<seconds {
                let senderTime = second * 1_000_000_000
                if kind == .video && senderTime < videoFrom { continue }
                let lastSentIndex = senderTime * rate / 1_000_000_000 / ticks
                events.append(.report(ssrc: ssrc, ntp: Self.ntp(ntpBase + senderTime), rtp: base &+ UInt32(truncatingIfNeeded: lastSentIndex * ticks),
                                      arrival: local(senderTime) + (reportDelay ?? delay)))
            }
        }
        stream(ssrc: ssrcs.video, kind: .video, base: rtpBase.video, ticks: 3_000, rate: 90_000, delay: delay.video)
        stream(ssrc: ssrcs.audio, kind: .audio, base: rtpBase.audio, ticks: 960, rate: 48_000, delay: delay.audio)
        return events.sorted { $0.at < $1.at }
    }
}

/// Runs senders' events through one timeline each, in arrival order, with the hold's timers.
struct TimelineRun {
    struct Placed {
        var frame: ReceivedFrame
        var captureLocal: Int64
    }

    var timelines: [String: SenderTimeline] = [:]
    var placed: [Placed] = []
    private var captures: [String: Int64] = [:]  // "ssrc/rtp" → local capture time

    init(_ senders: [(name: String, sender: SimulatedSender)], seconds: Int64, hold: Int64 = 2_000_000_000) {
        var all: [(sender: String, event: SimulatedSender.Event)] = []
        for (name, sender) in senders {
            var timeline = SenderTimeline(maximumHold: hold)
            timeline.addStream(ssrc: sender.ssrcs.video, clockRate: 90_000)
            timeline.addStream(ssrc: sender.ssrcs.audio, clockRate: 48_000)
            timelines[name] = timeline
            all += sender.events(seconds: seconds, sender: name).map { (name, $0) }
        }
        all.sort { $0.event.at < $1.event.at }
        for (name, event) in all {
            var output: [ReceivedFrame] = []
            let now = MonotonicTime(nanoseconds: event.at)
            if let deadline = timelines[name]?.nextDeadline, deadline <= now { timelines[name]?.release(now: deadline, into: &output) }
            switch event {
            case .frame(let frame, let capture):
                captures["\(name)/\(frame.ssrc)/\(frame.frame.rtpTimestamp)"] = capture
                timelines[name]?.take(frame, into: &output)
            case .report(let ssrc, let ntp, let rtp, _):
                _ = timelines[name]?.senderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: rtp, arrival: now, into: &output)
            }
            for frame in output {
                placed.append(Placed(frame: frame, captureLocal: captures["\(name)/\(frame.ssrc)/\(frame.frame.rtpTimestamp)"] ?? 0))
            }
        }
        for name in timelines.keys {
            var output: [ReceivedFrame] = []
            timelines[name]?.releaseAll(now: MonotonicTime(nanoseconds: .max / 2), into: &output)
            placed += output.map { Placed(frame: $0, captureLocal: captures["\(name)/\($0.ssrc)/\($0.frame.rtpTimestamp)"] ?? 0) }
        }
    }

    func frames(_ sender: String, _ kind: MediaKind) -> [Placed] {
        placed.filter { $0.frame.sender == sender && $0.frame.kind == kind }
    }

    /// Media time minus true local capture time, for each frame of `kind` (ns).
    func lateness(_ sender: String, _ kind: MediaKind) -> [Int64] {
        frames(sender, kind).map { $0.frame.mediaTime.nanoseconds - $0.captureLocal }
    }

    func counters(_ sender: String) -> SyncCounters { timelines[sender]?.counters ?? SyncCounters() }
}

@Suite struct SenderTimelineTests {
    /// Every step between consecutive frames of a stream is its RTP step, to within what the
    /// slew allows (1 ms per second of media: 33 µs for a video frame).
    static func stepsFollowRTP(_ frames: [TimelineRun.Placed], clockRate: Int64, slack: Int64 = 40_000) -> [String] {
        var problems: [String] = []
        for (previous, next) in zip(frames, frames.dropFirst()) {
            let ticks = Int64(Int32(bitPattern: next.frame.frame.rtpTimestamp &- previous.frame.frame.rtpTimestamp))
            let expected = ticks * 1_000_000_000 / clockRate
            let step = next.frame.mediaTime.nanoseconds - previous.frame.mediaTime.nanoseconds
            if abs(step - expected) > slack * max(1, ticks * 1_000 / clockRate / 33) {
                problems.append("step \(step) ns where RTP says \(expected) ns")
            }
        }
        return problems
    }

    @Test func aSteadySenderWithNoisyReportsKeepsItsRTPClockAndItsLipSync() {
        var sender = SimulatedSender()
        sender.jitter = 60_000_000
        sender.delay = (10_000_000, 40_000_000)
        let run = TimelineRun([("S", sender)], seconds: 60)
        let video = run.frames("S", .video), audio = run.frames("S", .audio)
        #expect(video.count == 1_800 && audio.count == 3_000)
        #expect(Self.stepsFollowRTP(video, clockRate: 90_000).isEmpty)
        #expect(Self.stepsFollowRTP(audio, clockRate: 48_000).isEmpty)
        // A/V: frames captured together land together (within 20 ms), from the first frame to the last.
        let videoLate = run.lateness("S", .video), audioLate = run.lateness("S", .audio)
        var worst: Int64 = 0
        for (index, late) in videoLate.enumerated() where index % 3 == 0 {
            worst = max(worst, abs(late - audioLate[index / 3 * 5]))
        }
        #expect(worst <= 20_000_000, "A/V offset reached \(worst / 1_000_000) ms")
        #expect(run.counters("S").arrivalStarts == 0 && run.counters("S").framesHeldForSync > 0)
    }

    @Test func aSenderWhoseClockRuns100ppmFastStaysWithTheOthersForHalfAnHour() {
        var fast = SimulatedSender()
        fast.ppm = 100
        fast.jitter = 20_000_000
        var steady = SimulatedSender()
        steady.seed = 8
        steady.jitter = 20_000_000
        steady.ntpBase = 3_800_000_000_000_000_000
        let run = TimelineRun([("fast", fast), ("steady", steady)], seconds: 1_800)
        // Without following the drift, the fast sender's media would end 180 ms ahead of its capture.
        for kind in [MediaKind.video, .audio] {
            let fastLate = run.lateness("fast", kind), steadyLate = run.lateness("steady", kind)
            let spread = fastLate.max()! - fastLate.min()!
            #expect(spread <= 20_000_000, "\(kind): the fast sender's placement moved by \(spread / 1_000_000) ms")
            // Files of the two senders line up: same capture instant, same media time (within 20 ms).
            for index in stride(from: 0, to: min(fastLate.count, steadyLate.count), by: 500) {
                #expect(abs(fastLate[index] - steadyLate[index]) <= 20_000_000, "\(kind) at frame \(index)")
            }
        }
        let fastVideo = run.lateness("fast", .video), fastAudio = run.lateness("fast", .audio)
        var worst: Int64 = 0
        for index in stride(from: 0, to: fastVideo.count, by: 3) { worst = max(worst, abs(fastVideo[index] - fastAudio[index / 3 * 5])) }
        #expect(worst <= 20_000_000, "A/V offset reached \(worst / 1_000_000) ms")
        // The drift is followed by slewing, never by a step.
        #expect(run.counters("fast").slewCorrections > 0)
        #expect(Self.stepsFollowRTP(run.frames("fast", .video), clockRate: 90_000).isEmpty)
        #expect(Self.stepsFollowRTP(run.frames("fast", .audio), clockRate: 48_000).isEmpty)
    }

    @Test func silenceIsAGapOfItsRealLength() {
        var sender = SimulatedSender()
        sender.silence = 5_000_000_000..<8_000_000_000
        let run = TimelineRun([("S", sender)], seconds: 12)
        let audio = run.frames("S", .audio).map(\.frame.mediaTime.nanoseconds)
        let steps = zip(audio, audio.dropFirst()).map { $1 - $0 }
        #expect(steps.filter { $0 != 20_000_000 } == [3_020_000_000])
        #expect(run.counters("S").timestampDiscontinuities == 0)
    }

    @Test func withoutReportsTheFirstFramesWaitTwoSecondsThenKeepTheirRTPSpacing() {
        var sender = SimulatedSender()
        sender.senderReports = false
        let run = TimelineRun([("S", sender)], seconds: 10)
        #expect(run.counters("S").arrivalStarts == 2)
        let video = run.frames("S", .video)
        #expect(video.count == 300 && Self.stepsFollowRTP(video, clockRate: 90_000).isEmpty)
        // Released when the hold ran out, 2 s after the first frame, then as they come.
        #expect(video.first?.frame.mediaTime.nanoseconds == video.first?.frame.completedAt.nanoseconds)
    }

    /// The SRs come only after the hold ran out: the streams start on arrival time (audio 30 ms
    /// later on the wire than video), and once the SRs come they slew into line, never stepping.
    @Test func reportsAfterTheHoldBringTheStreamsIntoLineBySlewing() {
        var sender = SimulatedSender()
        sender.delay = (10_000_000, 40_000_000)
        sender.reportsFrom = 4
        let run = TimelineRun([("S", sender)], seconds: 90)
        #expect(run.counters("S").arrivalStarts == 2 && run.counters("S").slewCorrections >= 1)
        #expect(Self.stepsFollowRTP(run.frames("S", .video), clockRate: 90_000).isEmpty)
        #expect(Self.stepsFollowRTP(run.frames("S", .audio), clockRate: 48_000).isEmpty)
        let videoLate = run.lateness("S", .video), audioLate = run.lateness("S", .audio)
        let first = abs(videoLate[0] - audioLate[0]), last = abs(videoLate[videoLate.count - 3] - audioLate[(videoLate.count - 3) / 3 * 5])
        #expect(first >= 25_000_000 && last <= 3_000_000, "A/V offset \(first / 1_000_000) ms at the start, \(last / 1_000_000) ms at the end")
    }

    /// libwebrtc: audio SRs only every 5 s (the first one 4.5 s in), video on its capture clock,
    /// Opus in DTX. The sender is held until its audio SR comes, so both tracks start where the
    /// reports put them and nothing slews: every block sits on its sender's RTP time.
    @Test func libwebrtcsSparseAudioReportsPlaceEveryBlockOnItsRTPTime() {
        var sender = SimulatedSender()
        sender.libwebrtc = (firstAudioReport: 4_500_000_000, captureJitter: 3_000_000)
        sender.delay = (25_000_000, 10_000_000)
        sender.jitter = 15_000_000
        sender.silence = 9_000_000_000..<14_000_000_000
        let run = TimelineRun([("S", sender)], seconds: 60)
        let counters = run.counters("S")
        #expect(counters.arrivalStarts == 0 && counters.slewCorrections == 0 && counters.timestampDiscontinuities == 0)
        for kind in [MediaKind.video, .audio] {
            // Media time − capture time is one constant per track: the RTP clock, to its tick.
            let late = run.lateness("S", kind), tick: Int64 = kind == .video ? 11_112 : 20_834
            #expect(late.max()! - late.min()! <= tick, "\(kind): placement moved by \(late.max()! - late.min()!) ns")
        }
        let videoLate = run.lateness("S", .video)[0], audioLate = run.lateness("S", .audio)[0]
        #expect(abs(videoLate - audioLate) <= 1_000_000, "A/V offset \((videoLate - audioLate) / 1_000) µs")
    }

    /// The first 6 s come 40 ms slower than the rest (a paced-out keyframe, bandwidth probing):
    /// sync is decided on the slow frames, and the faster path found later is not a drift, so
    /// no stream slews for it.
    @Test func aFasterPathFoundAfterSyncMovesNoBlock() {
        var sender = SimulatedSender()
        sender.libwebrtc = (firstAudioReport: 4_500_000_000, captureJitter: 3_000_000)
        sender.jitter = 5_000_000
        sender.slowStart = (until: 6_000_000_000, extra: 40_000_000)
        let run = TimelineRun([("S", sender)], seconds: 60)
        #expect(run.counters("S").slewCorrections == 0 && run.counters("S").delayFloorSteps >= 1)
        for kind in [MediaKind.video, .audio] {
            let late = run.lateness("S", kind)
            #expect(late.max()! - late.min()! <= 20_834, "\(kind): placement moved by \(late.max()! - late.min()!) ns")
        }
    }

    /// 20 s of a sender whose video joins at `senderTime`, 300 ms slower on the way than its
    /// audio, its SRs (every second from then on) 10 ms.
    static func videoJoining(at senderTime: Int64) -> TimelineRun {
        var sender = SimulatedSender()
        sender.videoFrom = senderTime
        sender.delay = (300_000_000, 10_000_000)
        sender.reportDelay = 10_000_000
        return TimelineRun([("S", sender)], seconds: 20)
    }

    /// Video joins 1.5 s in, 300 ms slower on the way than audio (its first keyframe paced out),
    /// after the sender was synchronised and before its own first SR (at 2 s). It waits for that
    /// SR and starts beside its audio, instead of 290 ms late on arrival time and sliding back
    /// 1 ms a second.
    @Test func aStreamStartingBeforeItsFirstReportWaitsForIt() {
        let run = Self.videoJoining(at: 1_500_000_000)
        #expect(run.counters("S").arrivalStarts == 0 && run.counters("S").slewCorrections == 0)
        let videoLate = run.lateness("S", .video), audioLate = run.lateness("S", .audio)
        #expect(abs(videoLate[0] - audioLate[0]) <= 1_000_000, "A/V offset \((videoLate[0] - audioLate[0]) / 1_000) µs")
        #expect(videoLate.max()! - videoLate.min()! <= 11_112, "video placement moved by \(videoLate.max()! - videoLate.min()!) ns")
    }

    /// The same, 5 s in: the recorder has written past where those frames belong, so video
    /// starts on arrival time and slews into line, as before.
    @Test func aStreamStartingLateInTheSessionStartsOnArrivalTime() {
        let run = Self.videoJoining(at: 5_500_000_000)
        #expect(run.counters("S").arrivalStarts == 1 && run.counters("S").slewCorrections == 1)
        let first = run.frames("S", .video).first!.frame
        #expect(first.mediaTime.nanoseconds == first.completedAt.nanoseconds)
    }

    /// A sender whose audio report comes even later than libwebrtc's longest interval is held
    /// no longer than the report wait: then it starts on arrival time and slews, as before.
    @Test func theHoldForAMissingReportEndsAtTheReportWait() {
        var sender = SimulatedSender()
        sender.libwebrtc = (firstAudioReport: 12_000_000_000, captureJitter: 0)
        let run = TimelineRun([("S", sender)], seconds: 30)
        #expect(run.counters("S").arrivalStarts == 2)
        let first = run.frames("S", .video).first!.frame
        #expect(first.mediaTime.nanoseconds == first.completedAt.nanoseconds)
        // Held for 8 s from the first frame (30 fps video and 50 audio frames a second), not 2 s.
        let held = run.counters("S").framesHeldForSync
        #expect((600...680).contains(held), "\(held) frames held")
    }

    @Test func aTimestampJumpStartsANewOriginAndIsCounted() {
        var clock = SenderClock()
        clock.addStream(ssrc: 1, clockRate: 48_000)
        var times: [Int64] = []
        for index in 0..<100 {
            let rtp: UInt32 = index < 50 ? UInt32(index * 960) : UInt32(index * 960) &+ 48_000 * 600  // +10 min at frame 50
            let arrival = MonotonicTime(nanoseconds: 1_000_000_000 + Int64(index) * 20_000_000)
            times.append(clock.place(ssrc: 1, rtp: clock.unwrap(ssrc: 1, rtpTimestamp: rtp), arrival: arrival).nanoseconds)
        }
        #expect(clock.counters.timestampDiscontinuities == 1)
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 > 0 && $0 <= 21_000_000 }, "\(steps.filter { $0 != 20_000_000 })")
    }

    @Test func reportsFarFromTheFittedLineAreOutliersAndThreeInARowRestartTheFit() {
        var estimator = RTPToNTPEstimator(clockRate: 90_000)
        for second in 0..<10 { #expect(estimator.add(rtp: Int64(second) * 90_000, ntp: 5_000_000_000 + Int64(second) * 1_000_000_000) == .accepted) }
        #expect(estimator.add(rtp: 10 * 90_000, ntp: 15_500_000_000) == .outlier)  // 500 ms off the line
        #expect(estimator.ntp(at: 10 * 90_000) == 15_000_000_000)
        #expect(estimator.add(rtp: 10 * 90_000, ntp: 15_000_000_000) == .accepted)
        #expect(estimator.add(rtp: 10 * 90_000, ntp: 15_000_000_000) == .ignored)
        for second in 11..<14 {
            let update = estimator.add(rtp: Int64(second) * 90_000, ntp: 60_000_000_000 + Int64(second) * 1_000_000_000)
            #expect(update == (second < 13 ? .outlier : .restarted))
        }
        #expect(estimator.ntp(at: 13 * 90_000) == 73_000_000_000)
        // Hostile values neither trap nor wrap into nonsense.
        _ = estimator.add(rtp: .max / 2, ntp: .max / 2)
        _ = estimator.ntp(at: .min / 2)
    }

    @Test func aStretchedClockIsFittedOverTheReports() {
        // The RTP clock runs 0.1 % slow against the sender's NTP clock: over 20 reports the fit
        // finds it, where the newest report alone would leave each frame off by up to a millisecond.
        var estimator = RTPToNTPEstimator(clockRate: 48_000)
        for second in 0..<20 { _ = estimator.add(rtp: Int64(second) * 47_952, ntp: Int64(second) * 1_000_000_000) }
        let predicted = estimator.ntp(at: 30 * 47_952) ?? 0
        #expect(abs(predicted - 30_000_000_000) < 100_000)
    }
}
