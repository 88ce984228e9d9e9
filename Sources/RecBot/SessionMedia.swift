import Archive
import DiskLayout
import Foundation
import Logging
import Media
import NIOConcurrencyHelpers
import NIOCore
import PeerConnection
import Recorder
import Transport
import WireCoding

/// What one session keeps across its connections to Sora, so a rejoin carries on the same
/// archive: the recorders (confined to the session's media event loop, which every connection's
/// transport also runs on), the files being finished, the event log, the outages, and the
/// counters of the connections that ended (metrics only ever grow).
///
/// Signaling has a loop of its own. NIO runs a loop's queued tasks until none are left before it
/// reads sockets again, and an overloaded media loop always has a drain of the receive backlog
/// queued: on a shared loop the WebSocket's pongs went unread and Sora's connection was closed
/// (1006) while media was still arriving.
final class SessionMedia: @unchecked Sendable {
    // @unchecked: `recordings` is only touched on `loop`; `ended` under `lock`; the newest context in its own locked box.
    let loop: EventLoop
    let signalingLoop: EventLoop
    let layout: ArchiveLayout
    let recordings: Recordings
    let finisher: RecordingFinisher
    let eventLog: SignalingEventLog
    let interruptions: InterruptionLog
    /// `--capture-rtp`, across every connection of the session.
    let capture: PacketCapture?
    private let lock = NSLock()
    private var ended = ConnectionCounters()
    /// The newest connection's sidecar context (shared with the file-start callback).
    private let contextBox = NIOLockedValueBox<SidecarContext?>(nil)
    /// Who is sending, across the session's connections (`--stop-when-idle`, `--wait-for-senders`).
    private let presenceBox: NIOLockedValueBox<SenderPresence>

    /// The receive counters of the connections that ended, summed.
    struct ConnectionCounters: Sendable {
        var transport = TransportCounters()
        var received = ReceiveCounters()
        var receiver = MediaReceiverCounters()
    }

    let webhooks: SessionWebhooks?
    private let sessionStartedAt: Int64

    init(session: JoinSession.SessionStart, options: JoinOptions, loop: EventLoop, signalingLoop: EventLoop) {
        self.loop = loop
        (webhooks, sessionStartedAt) = (session.webhooks, session.startedAt)
        self.signalingLoop = signalingLoop
        presenceBox = NIOLockedValueBox(SenderPresence(idleMilliseconds: options.stopWhenIdleMilliseconds,
                                                       waitForSendersMilliseconds: options.waitForSendersMilliseconds, joinedAt: session.joinedAt))
        let (writer, sessionID) = (session.writer, session.id)
        let layout = options.dataDirectory.layout(session: session.id)
        let (host, clock) = (options.host, session.clock)
        self.layout = layout
        eventLog = SignalingEventLog(sessionID: session.id, writer: writer, logger: session.logger, clock: session.clock, limits: options.eventLimits)
        interruptions = InterruptionLog(sessionID: session.id, settings: options.rejoin, writer: writer, logger: session.logger,
                                        random: options.random, previous: session.prior?.interruptions ?? [], segment: session.segment)
        if let prior = session.prior { interruptions.failover(lastMediaWallClock: prior.lastMediaWallClock) }
        let segment = session.segment
        capture = options.capturePath.flatMap { path in
            do {
                return try PacketCapture(path: path, clock: session.clock, logger: session.logger)
            } catch {
                session.logger.error("capture: cannot create the file; recording without it", metadata: ["path": "\(path)", "error": "\(error)"])
                return nil
            }
        }
        // The catalog learns of each file when it is created, so a kill leaves a row to repair.
        let (contextBox, logger) = (self.contextBox, session.logger)
        var hooks = RecorderHooks()
        hooks.fileStarted = { recorder in
            var row = RecordingRecord(sessionID: sessionID, connectionID: recorder.connectionID, part: recorder.part,
                                      path: layout.catalogPath(recorder.filename), videoCodec: recorder.tracks.videoCodec?.rawValue,
                                      audioCodec: recorder.tracks.audioChannels != nil ? "OPUS" : nil, startedAt: recorder.fileStartMilliseconds,
                                      status: .recording)
            (row.host, row.segment) = (host, segment)
            writer.submit(.startRecording(row))
            if let webhooks = session.webhooks, let context = contextBox.withLockedValue({ $0 }) { webhooks.archiveStarted(recorder, context: context, sessionStartedAt: session.startedAt) }
        }
        hooks.videoSizeRefused = { recorder, width, height in
            logger.warning("a keyframe's video size is beyond what WebM holds; ignored, the recording goes on",
                           metadata: ["sender": "\(recorder.connectionID)", "width": "\(width)", "height": "\(height)",
                                      "refused": "\(recorder.statistics.videoSizesRefused)"])
        }
        hooks.writeFailed = { recorder, error in
            // Loud at once: this sender's recording stops here; the others go on.
            logger.error("recording storage failed; the sender's file keeps what was written",
                         metadata: ["sender": "\(recorder.connectionID)", "part": "\(recorder.part)", "error": "\(error)"])
        }
        recordings = Recordings(archive: layout, recordingStartMilliseconds: session.startedAt, recordingStartTime: session.startTime,
                                interleaveNanoseconds: options.recovery.maximumRecoveryDelayNanoseconds + 400_000_000,
                                split: options.split, clock: session.clock, random: options.random, hooks: hooks,
                                continuing: session.prior?.parts ?? PriorParts())
        recorderStarted = { recorder in
            writer.submit(.upsertConnection(ConnectionRecord(sessionID: sessionID, connectionID: recorder.connectionID,
                                                             firstSeenAt: clock.wallClockMilliseconds(), role: "sendonly")))
        }
        // The recordings' books are kept on the loop: a finished recorder's final totals go there.
        let recordings = LoopConfined(self.recordings, eventLoop: loop)
        var finished = RecordingFinisher.Hooks()
        finished.finished = { recorder, totals in loop.execute(confined: recordings) { $0.value.finished(recorder, totals: totals) } }
        if let webhooks = session.webhooks {
            finished.archive = { done, context, layout in webhooks.archiveFinished(done, context: context, layout: layout) }
            finished.splitEnd = { done, context, layout in webhooks.splitArchiveEnd(done, context: context, layout: layout) }
        }
        finisher = RecordingFinisher(sessionID: session.id, host: options.host, segment: segment, writer: writer, clock: session.clock, hooks: finished)
        eventLog.onParticipant = { [finisher] record in
            finisher.noteParticipant(connectionID: record.connectionID, clientID: record.clientID, bundleID: record.bundleID)
        }
    }

    /// A sender's recorder started: the catalog knows the sender from then on.
    let recorderStarted: (SenderRecorder) -> Void

    var endedConnections: ConnectionCounters { lock.withLock { ended } }

    /// The sidecar context of the newest connection (for the report and the end markers).
    var lastContext: SidecarContext? { contextBox.withLockedValue { $0 } }

    func connectionStarted(context: SidecarContext) {
        contextBox.withLockedValue { $0 = context }
        webhooks?.connectionStarted(context: context, sessionStartedAt: sessionStartedAt)
    }

    /// An offer or re-offer named these senders.
    func sendersChanged(to count: Int, now: MonotonicTime) {
        presenceBox.withLockedValue { $0.sendersChanged(to: count, now: now) }
    }

    var presence: SenderPresence { presenceBox.withLockedValue { $0 } }

    /// A connection's final counters join the session's.
    func connectionEnded(transport: TransportCounters, received: ReceiveCounters, receiver: MediaReceiverCounters) {
        lock.withLock {
            ended.transport = ended.transport + transport
            ended.received = ended.received + received
            ended.receiver = ended.receiver + receiver
        }
    }
}

