import Archive
import Foundation
import Logging
import Media
import Outcomes
import PeerConnection
import Recorder
import SoraSignaling
import SoraSignalingCore
import Transport

/// The end of one connection to Sora: the goodbye, what it refused or dropped logged once,
/// the transport closed and its files handed to the finisher. The session's own end (every
/// file done, the report, the exit status) is `SessionFinish`.
struct ConnectionShutdown {
    let session: JoinSession.SessionStart
    let media: MediaPath
    private var eventLog: SignalingEventLog { media.media.eventLog }
    private var logger: Logger { session.logger }

    /// `disconnect` where Sora still listens, then the WebSocket closed.
    func leave(_ signaling: SignalingSession, connection: SignalingConnection) async {
        for case .send(let text, let route) in signaling.leave() { media.send(text, via: route, connection: connection) }
        if !connection.isClosed { await connection.close() }
    }

    /// What the data channels and the signaling session received and refused (hostile or broken
    /// input is dropped and counted as it arrives; this is the one place it is reported).
    func logSummary(signaling: SignalingSessionCounters, inboxDropped: SessionInbox.Dropped) async {
        if inboxDropped.messages > 0 {
            logger.error("signaling messages dropped: more arrived than could be handled",
                         metadata: ["dropped": "\(inboxDropped.messages)", "dropped_bytes": "\(inboxDropped.bytes)"])
        }
        if eventLog.refused > 0 {
            logger.warning("events not stored: the session's event limit was reached",
                           metadata: ["refused": "\(eventLog.refused)", "refused_bytes": "\(eventLog.refusedBytes)", "stored": "\(eventLog.stored)"])
        }
        if signaling.malformedMessages > 0 {
            logger.warning("signaling messages that were not valid JSON objects were ignored", metadata: ["malformed": "\(signaling.malformedMessages)"])
        }
        let core = media.core
        let recordings = media.media.recordings
        if let parts = try? await media.transport.eventLoop.submit(confined: recordings, { $0.counters }).get(),
           parts != RecordingsCounters() {
            logger.notice("recordings: some senders were split or refused", metadata: [
                "codec_changes": "\(parts.codecChanges)", "returning_senders": "\(parts.returningSenders)",
                "unsafe_sender_frames": "\(parts.unsafeSenderFrames)",
            ])
        }
        if let received = try? await media.transport.eventLoop.submit(confined: core, { $0.media?.counters }).get() {
            logMediaSummary(received)
        }
        guard let (channels, sctp) = try? await media.transport.eventLoop.submit(confined: core, { core in core.dataChannels.map { ($0.counters, $0.association.counters) } }).get()
        else { return }
        let metadata: Logger.Metadata = [
            "messages": "\(channels.messagesReceived)", "undecodable": "\(signaling.undecodableDataChannelMessages)",
            "unknown_label": "\(signaling.unknownLabelMessages)", "unknown_stream": "\(channels.messagesOnUnknownStreams)",
            "reopened": "\(channels.reopenedChannels)", "malformed_dcep": "\(channels.malformedControlMessages)",
            "unknown_ppid": "\(channels.unknownPayloadProtocols)", "reset_unknown_stream": "\(channels.resetsOfUnknownStreams)",
            "sctp_dropped": "\(sctp.droppedPackets)", "oversized": "\(sctp.oversizedMessages)",
            "retransmissions": "\(sctp.retransmissions)", "stream_resets": "\(sctp.streamResetsReceived)",
        ]
        let refused = signaling.undecodableDataChannelMessages + signaling.unknownLabelMessages + channels.messagesOnUnknownStreams
            + channels.reopenedChannels + channels.malformedControlMessages + channels.unknownPayloadProtocols + sctp.droppedPackets
            + sctp.oversizedMessages
        if refused > 0 {
            logger.warning("data channels: some input was refused", metadata: metadata)
        } else {
            logger.info("data channels", metadata: metadata)
        }
    }

    private func logMediaSummary(_ received: MediaReceiverCounters) {
        if received.unrouted > 0 {
            // RTP that belongs to no negotiated stream: a misbehaving server, or a hostile one.
            logger.warning("media: packets on no negotiated stream were refused", metadata: [
                "unannounced_ssrc": "\(received.unannouncedStream)", "unknown_stream": "\(received.unknownStream)",
                "unknown_payload_type": "\(received.unknownPayloadType)", "unknown_rtx": "\(received.unknownRetransmission)",
                "too_many_streams": "\(received.tooManyStreams)",
            ])
        }
        if received.feedback != FeedbackBudgetCounters() {
            // Every stream lost packets at once: usually this host (CPU, socket buffer), not the path.
            logger.warning("media: NACKs and keyframe requests were held back by the session's budget; is this host overloaded?", metadata: [
                "nack_waits": "\(received.feedback.nacksDeferred)", "keyframe_request_waits": "\(received.feedback.keyframeRequestsDeferred)",
            ])
        }
        let sync = received.sync
        if sync.timestampDiscontinuities > 0 || sync.inconsistentSenders > 0 || sync.arrivalStarts > 0 || sync.slewCorrections > 0 {
            // How each file's timeline was kept (docs/timeline.md): worth a line when sync had work to do.
            logger.notice("media: timeline corrections", metadata: [
                "slews": "\(sync.slewCorrections)", "slewed_ms": "\(sync.slewedNanoseconds / 1_000_000)",
                "discontinuities": "\(sync.timestampDiscontinuities)", "arrival_starts": "\(sync.arrivalStarts)",
                "inconsistent_senders": "\(sync.inconsistentSenders)", "outlier_reports": "\(sync.outlierSenderReports)",
                "delay_floor_steps": "\(sync.delayFloorSteps)",
            ])
        }
        if received.budgetSheds > 0 {
            logger.warning("media: the receive buffer budget made streams give up gaps early", metadata: ["sheds": "\(received.budgetSheds)"])
        }
    }

    /// This connection's datagrams that never reached the recording because the host could not
    /// keep up (the receive backlog full, or the kernel's buffer before it).
    private func logOverload(_ transport: TransportCounters) {
        let backlog = transport.backlog
        guard backlog.mediaDropped + backlog.controlDropped + transport.kernelReceiveDrops > 0 else { return }
        logger.warning("media: datagrams were dropped because recbot could not keep up", metadata: [
            "backlog_media": "\(backlog.mediaDropped)", "backlog_control": "\(backlog.controlDropped)",
            "kernel": "\(transport.kernelReceiveDrops)", "backlog_peak_bytes": "\(backlog.peakBytes)",
        ])
    }

    /// Closes the transport and hands this connection's files to the finisher: as each
    /// sender's last part, or, when a rejoin follows (`interrupted`), as split parts the
    /// senders continue after it. Returns what this end means for the session.
    func close(_ end: SignalingSessionEnd, interrupted: Bool) async -> EndCause {
        var result: EndCause = end.isFailure ? .connectionLost : .completed
        if case .relay(let failure) = media.transportFailure.withLockedValue({ $0 }) {
            result = failure.isAuthentication ? .relayCredentialsRefused : .relayUnavailable
        }
        let kernelDrops = media.transport.kernelDrops()  // the sockets' count goes with them
        await media.transport.close()
        var endContext = media.context
        endContext.endReason = end.reason
        let (pipeline, core, now, context) = (media.pipeline, media.core, session.clock.now(), endContext)
        let boundary = media.times.withLockedValue { $0.lastFrame } ?? now
        try? await media.transport.eventLoop.submit(confined: pipeline) { pipeline in
            pipeline.end(interrupted: interrupted, boundary: boundary, context: context, now: now)
        }.get()
        let backlog = media.transport.backlog
        let counters = try? await media.transport.eventLoop.submit(confined: core) { core in
            (core.counters.including(backlog.counters, kernelDrops: kernelDrops), core.media?.totalCounters ?? ReceiveCounters(), core.media?.counters ?? MediaReceiverCounters())
        }.get()
        if let (transport, received, receiver) = counters {
            logOverload(transport)
            media.media.connectionEnded(transport: transport, received: received, receiver: receiver)
        }
        return result
    }
}
