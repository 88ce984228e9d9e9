import Archive
import Logging
import Media
import PeerConnection
import Recorder
import WireCoding

/// One connection's media side on the session's loop: the peer connection core's frames go to
/// the session's `Recordings`, and everything the recordings answer is applied here, in the
/// same turn — a keyframe wanted or a stream to restart goes to the core (its RTCP returns to
/// the transport with the event), and every part they hand back is finished by `finish`, the
/// one way a file is finished.
final class ConnectionPipeline {
    /// Where finished parts and new senders go: the session's finisher and catalog in `join`,
    /// the test's own collection in a simulated session.
    struct Sinks {
        /// A part to finish off the loop, with what its sender received while it ran.
        var finish: (SenderRecorder, ReceiveCounters, SidecarContext, _ isLastPart: Bool) -> Void
        /// A sender's recorder started.
        var recorderStarted: (SenderRecorder) -> Void
    }

    let core: PeerConnectionCore
    let recordings: Recordings
    private let sinks: Sinks
    private let logger: Logger
    /// Each running part's sender counters when it started, so its sidecar and catalog row
    /// count what was received while it ran (a sender's first part on this connection: all).
    private var baselines: [ObjectIdentifier: ReceiveCounters] = [:]
    private var sendersSeen: Set<String> = []

    init(core: PeerConnectionCore, recordings: Recordings, sinks: Sinks, logger: Logger) {
        self.core = core
        self.recordings = recordings
        self.sinks = sinks
        self.logger = logger
    }

    /// The pipeline of a `join` connection: parts go to the session's finisher, senders to its catalog.
    convenience init(core: PeerConnectionCore, media: SessionMedia, logger: Logger) {
        let finisher = media.finisher
        self.init(core: core, recordings: media.recordings, sinks: Sinks(
            finish: { recorder, counts, context, isLastPart in finisher.finish(recorder, counts: counts, context: context, isLastPart: isLastPart) },
            recorderStarted: media.recorderStarted), logger: logger)
    }

    /// Frames from the core: recorded, and what the recordings ask for applied.
    func record(_ frames: [ReceivedFrame], context: SidecarContext) {
        guard let now = frames.last?.completedAt else { return }
        apply(recordings.add(frames), context: context, now: now)
    }

    /// A sender's video paused or resumed for overload: its recording notes the gap.
    func overload(_ event: OverloadEvent) {
        switch event {
        case .videoPaused(let sender, _): recordings.videoPaused(sender: sender)
        case .videoResumed(let sender, _): recordings.videoResumed(sender: sender)
        case .started, .ended: break
        }
    }

    /// The (re-)negotiation names these senders: those gone are finished.
    func update(senders: [String: SenderLayout], refusedVideo: [String: String], context: SidecarContext, now: MonotonicTime) {
        let output = recordings.update(senders: senders, refusedVideo: refusedVideo, now: now)
        for part in output.finish where part.isLastPart && part.recorder.part <= 1 {
            logger.info("sender left; file finished", metadata: ["sender": "\(part.recorder.connectionID)"])
        }
        apply(output, context: context, now: now)
    }

    /// The connection ends: every part is finished, as its sender's last unless a rejoin follows
    /// (`interrupted`: each part stops at `boundary`, the connection's last frame).
    func end(interrupted: Bool, boundary: MonotonicTime, context: SidecarContext, now: MonotonicTime) {
        let output = interrupted ? recordings.endForInterruption(boundary: boundary, now: now) : recordings.endAll(now: now)
        apply(output, context: context, now: now)
    }

    /// Everything the recordings asked for, in one place.
    func apply(_ output: RecordingsOutput, context: SidecarContext, now: MonotonicTime) {
        guard !output.isEmpty else { return }  // most batches of frames ask for nothing
        for event in output.events { note(event) }
        // A video frame the recorder had to drop: its stream must restart at a keyframe.
        for lost in output.framesLost {
            core.handle(.frameLostDownstream(ssrc: lost.ssrc, rtpTimestamp: lost.rtpTimestamp), now: now)
        }
        // A split boundary passed: the next part starts at a keyframe, asked for now.
        for ssrc in output.keyframesWanted { core.handle(.keyframeWanted(ssrc: ssrc), now: now) }
        finish(output.finish, context: context)
    }

    /// Hands parts to the finisher (off the loop), in sender order, each with what its sender
    /// received while it ran.
    private func finish(_ parts: [PartToFinish], context: SidecarContext) {
        for part in parts.sorted(by: { ($0.recorder.connectionID, $0.recorder.part) < ($1.recorder.connectionID, $1.recorder.part) }) {
            let recorder = part.recorder
            let received = core.media?.counters(sender: recorder.connectionID) ?? ReceiveCounters()
            let baseline = baselines.removeValue(forKey: ObjectIdentifier(recorder)) ?? ReceiveCounters()
            sinks.finish(recorder, received.since(baseline), context, part.isLastPart)
        }
    }

    private func note(_ event: RecordingsEvent) {
        switch event {
        case .started(let recorder):
            let sender = recorder.connectionID
            // The sender's first part here, and the whole-file archive, count from the connection's start.
            let first = sendersSeen.insert(sender).inserted || recorder.part == 0
            baselines[ObjectIdentifier(recorder)] = first ? ReceiveCounters() : core.media?.counters(sender: sender) ?? ReceiveCounters()
            sinks.recorderStarted(recorder)
            logger.info("recording sender", metadata: ["sender": "\(sender)", "video": "\(recorder.tracks.videoCodec?.rawValue ?? "-")",
                                                       "audio": "\(recorder.tracks.audioChannels != nil)", "part": "\(recorder.part)"])
        case .unsafeSender(let sender):
            logger.error("sender id is not safe as a file name; its media is not recorded", metadata: ["sender": "\(sender)"])
        case .senderReturned(let sender):
            logger.notice("a sender seen before (it left, or the connection to Sora was lost) is back; its recording continues in a new part",
                          metadata: ["sender": "\(sender)"])
        case .videoCodecChanged(let sender, let from, let to, let part):
            logger.notice("video codec changed; the sender's recording continues in a new part",
                          metadata: ["sender": "\(sender)", "from": "\(from?.rawValue ?? "-")", "to": "\(to.rawValue)",
                                     "part": "\(part.map(String.init) ?? "-")"])
        case .cutWithoutKeyframe(let sender, let part):
            logger.warning("no keyframe came after the split boundary; the part is cut without one",
                           metadata: ["sender": "\(sender)", "part": "\(part)"])
        }
    }
}
