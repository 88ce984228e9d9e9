import Archive
import Foundation
import Logging
import Media
import Recorder
import SoraSignaling
import Transport

/// The end of a recording session: the goodbye to Sora, the transport closed, every file
/// finished within a deadline, then the report. What the session refused or dropped is
/// logged once here and returned for the catalog.
struct SessionShutdown {
    let session: JoinSession.SessionStart
    let options: JoinOptions
    let media: MediaPath
    let eventLog: SignalingEventLog
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
        let recordings = media.recordings
        if let parts = try? await media.transport.eventLoop.submit({ recordings.counters }).get(),
           parts != RecordingSetCounters() {
            logger.notice("recordings: some senders were split or refused", metadata: [
                "codec_changes": "\(parts.codecChanges)", "returning_senders": "\(parts.returningSenders)",
                "unsafe_sender_frames": "\(parts.unsafeSenderFrames)",
            ])
        }
        if let received = try? await media.transport.eventLoop.submit({ core.media?.counters }).get() {
            logMediaSummary(received)
        }
        guard let (channels, sctp) = try? await media.transport.eventLoop.submit({ core.dataChannels.map { ($0.counters, $0.association.counters) } }).get()
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
            ])
        }
        if received.budgetSheds > 0 {
            logger.warning("media: the receive buffer budget made streams give up gaps early", metadata: ["sheds": "\(received.budgetSheds)"])
        }
    }

    /// Closes the transport, finishes every file (at most `finalizeTimeoutSeconds`; what is
    /// not done by then is left to `recbot repair`) and writes the report.
    func finish(_ end: SignalingSessionEnd, inboxDropped: SessionInbox.Dropped) async -> SessionEnding {
        var result: ExitStatus = end.isFailure ? .network : .success
        if case .relay(let failure) = media.transportFailure.withLockedValue({ $0 }) {
            result = failure.isAuthentication ? .relayCredentials : .relayUnavailable
        }
        var reason = end.reason
        let stoppedAt = JoinSession.nowMilliseconds()
        await media.transport.close()
        var endContext = media.context
        endContext.endReason = reason
        for (recorder, counts) in await media.remainingRecorders().sorted(by: { $0.0.connectionID < $1.0.connectionID }) {
            media.finisher.finish(recorder, counts: counts, context: endContext)
        }
        let unfinished = await media.finisher.waitForAll(timeoutSeconds: options.finalizeTimeoutSeconds)
        if !unfinished.isEmpty {
            logger.error("finishing files took too long; run `recbot repair` to finalize the rest",
                         metadata: ["seconds": "\(options.finalizeTimeoutSeconds)", "senders": "\(unfinished.joined(separator: ","))"])
            (result, reason) = (.storage, "storage: finalize timed out after \(Int(options.finalizeTimeoutSeconds)) s for \(unfinished.joined(separator: ", "))")
        }
        let all = media.finisher.all.sorted { $0.connectionID < $1.connectionID }
        let finished = all.filter { $0.error == nil }
        let failed = all.filter { $0.error != nil }
        for recording in failed {
            logger.error("recording failed", metadata: ["sender": "\(recording.connectionID)", "part": "\(recording.part)", "error": "\(recording.error ?? "")"])
        }
        let cutShort = finished.filter { $0.interruption != nil }
        for recording in cutShort {
            logger.error("recording cut short", metadata: ["sender": "\(recording.connectionID)", "part": "\(recording.part)",
                                                          "error": "\(recording.interruption ?? "")"])
        }
        var ending = SessionEnding(result, reason, recordings: finished.count)
        ending.counters.eventsStored = Int64(eventLog.stored - session.writer.droppedAdmittedEvents)
        ending.counters.eventsRefused = Int64(eventLog.refused)
        ending.counters.eventsRefusedBytes = Int64(eventLog.refusedBytes)
        ending.counters.messagesDropped = Int64(inboxDropped.messages)
        if !all.isEmpty || !unfinished.isEmpty {
            do {
                try writeReport(finished: finished, failed: failed.map(\.connectionID) + unfinished, context: endContext, stoppedAt: stoppedAt)
            } catch {
                ending.result = .storage
                ending.reason = "storage: report: \(error)"
                return ending
            }
        }
        if !failed.isEmpty && ending.result == .success {
            ending.result = .storage
            ending.reason = "storage: recording failed for \(failed.map(\.connectionID).joined(separator: ", "))"
        } else if !cutShort.isEmpty && ending.result == .success {
            ending.result = .storage
            ending.reason = "storage: recording cut short by a write error for \(cutShort.map(\.connectionID).joined(separator: ", "))"
        }
        return ending
    }

    private func writeReport(finished: [FinishedRecording], failed: [String], context: SidecarContext, stoppedAt: Int64) throws {
        let layout = media.layout
        try layout.createDirectory()
        var report = Sidecar.report(finished, failed: failed, context: context, layout: layout,
                                    startedAtMilliseconds: session.startedAt, stoppedAtMilliseconds: stoppedAt)
        report["events_stored"] = eventLog.stored - session.writer.droppedAdmittedEvents
        report["events_refused"] = eventLog.refused
        report["events_refused_bytes"] = eventLog.refusedBytes
        report["events_dropped"] = session.writer.droppedEvents  // the catalog could not keep up
        try ArchiveLayout.writeJSON(report, to: layout.reportPath)
    }
}
