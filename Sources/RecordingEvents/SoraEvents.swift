import DiskLayout
import Foundation
import Recorder
import Webhooks

/// The events Sora's recorder sends, with its names and fields (as its server SDK describes
/// them), built from what recbot records. Its own target between `Recorder` (the facts) and
/// `Webhooks` (the outbox and delivery, which need know nothing of recordings).
public struct SoraEvents: Sendable {
    public let nodeName: String
    public let version: String

    public init(nodeName: String, version: String) {
        (self.nodeName, self.version) = (nodeName, version)
    }

    /// The recording began (its first connection to Sora is up).
    public func recordingStarted(context: SidecarContext, startedAt: Int64, now: Int64) -> WebhookEvent {
        var data = ids(context, connectionID: nil)
        data["start_timestamp"] = rfc3339(milliseconds: startedAt)
        data["created_at"] = startedAt / 1000
        data["split_only"] = context.splitOnly ?? false
        if let seconds = context.splitDurationSeconds { data["split_duration"] = seconds }
        data["recording_metadata"] = context.recordingMetadataValue
        return event("recording.started", context, connectionID: nil, data: data, now: now)
    }

    /// A sender's file was created.
    public func archiveStarted(context: SidecarContext, connectionID: String, tracks: SenderTracks, filename: String,
                               fileStartMilliseconds: Int64, startOffsetSeconds: Int64, now: Int64) -> WebhookEvent {
        var data = ids(context, connectionID: connectionID)
        data.merge(Self.trackFields(tracks)) { $1 }
        data["filename"] = filename
        data["start_time"] = fileStartMilliseconds / 1000
        data["start_time_offset"] = startOffsetSeconds
        data["start_timestamp"] = rfc3339(milliseconds: fileStartMilliseconds)
        data["created_at"] = now / 1000
        return event("archive.started", context, connectionID: connectionID, data: data, now: now)
    }

    /// A file was finished: `archive.available` (a split part: `split-archive.available`, with
    /// its `split_index`), or `archive.failed` when nothing usable was written.
    public func archiveFinished(_ recording: FinishedRecording, context: SidecarContext, layout: ArchiveLayout, now: Int64) -> WebhookEvent {
        var data = Sidecar.object(recording, context: context, layout: layout)
        var recbot: [String: Any] = [:]
        if let interruption = recording.interruption { recbot["interrupted"] = interruption }
        let type: String
        if let error = recording.error {
            type = "archive.failed"
            recbot["error"] = error
            data["size"] = nil
        } else {
            type = recording.part > 0 ? "split-archive.available" : "archive.available"
        }
        return event(type, context, connectionID: recording.connectionID, data: data, recbot: recbot.isEmpty ? nil : recbot, now: now)
    }

    /// A split sender's last part is done (`split-archive-end-<id>.json` written).
    public func splitArchiveEnd(_ last: FinishedRecording, context: SidecarContext, layout: ArchiveLayout, now: Int64) -> WebhookEvent {
        var data = Sidecar.object(last, context: context, layout: layout)
        data["split_last_index"] = ArchiveLayout.splitIndex(last.part)
        data["split_index"] = nil
        let marker = layout.splitEndFilename(connectionID: last.connectionID)
        data["metadata_filename"] = marker
        data["metadata_file_path"] = layout.path(of: marker)
        return event("split-archive.end", context, connectionID: last.connectionID, data: data, now: now)
    }

    /// The report is written: the recording is complete on disk.
    public func recordingReport(_ report: [String: Any], context: SidecarContext, layout: ArchiveLayout, interruptions: Int,
                                now: Int64) -> WebhookEvent {
        var data = report
        data["filename"] = layout.reportFilename
        data["file_path"] = layout.reportPath
        let recbot: [String: Any] = ["interruptions": interruptions, "end_reason": context.endReason ?? NSNull()]
        return event("recording.report", context, connectionID: nil, data: data, recbot: recbot, now: now)
    }

    // MARK: Parts

    private func event(_ type: String, _ context: SidecarContext, connectionID: String?, data: [String: Any],
                       recbot: [String: Any]? = nil, now: Int64) -> WebhookEvent {
        WebhookEvent(type: type, sessionID: context.recordingID, envelope: ids(context, connectionID: connectionID), data: data,
                     recbot: recbot, timestampMilliseconds: now, nodeName: nodeName, version: version)
    }

    private func ids(_ context: SidecarContext, connectionID: String?) -> [String: Any] {
        var fields: [String: Any] = [
            "recording_id": context.recordingID,
            "channel_id": context.channelID,
            "session_id": context.soraSessionID ?? NSNull(),
        ]
        if let connectionID {
            fields["connection_id"] = connectionID
            fields["client_id"] = context.clientIDs[connectionID] ?? NSNull()
            fields["bundle_id"] = context.bundleIDs[connectionID] ?? NSNull()
        }
        return fields
    }

    static func trackFields(_ tracks: SenderTracks) -> [String: Any] {
        var fields: [String: Any] = ["audio": tracks.audioChannels != nil, "video": tracks.videoCodec != nil]
        if tracks.audioChannels != nil { fields["audio_codec_type"] = "OPUS" }
        if let codec = tracks.videoCodec { fields["video_codec_type"] = codec.rawValue }
        return fields
    }
}

extension SoraEvents {
    /// What a repaired session would have sent at its end, from the files `recbot repair`
    /// wrote: `archive.available` / `split-archive.available` per sidecar, `split-archive.end`
    /// per end marker, then `recording.report`. Marked `recbot.repaired`: the recorder was
    /// killed, the files were finished after it.
    public func repaired(sessionID: String, sidecars: [[String: Any]], splitEnds: [[String: Any]] = [], report: [String: Any]?,
                         reportFilename: String, now: Int64) -> [WebhookEvent] {
        func envelope(_ object: [String: Any]) -> [String: Any] {
            object.filter { ["recording_id", "channel_id", "session_id", "connection_id", "client_id", "bundle_id"].contains($0.key) }
        }
        var events = sidecars.map { sidecar in
            WebhookEvent(type: sidecar["split_index"] == nil ? "archive.available" : "split-archive.available", sessionID: sessionID,
                         envelope: envelope(sidecar), data: sidecar, recbot: ["repaired": true], timestampMilliseconds: now,
                         nodeName: nodeName, version: version)
        }
        events += splitEnds.map { marker in
            WebhookEvent(type: "split-archive.end", sessionID: sessionID, envelope: envelope(marker), data: marker, recbot: ["repaired": true],
                         timestampMilliseconds: now, nodeName: nodeName, version: version)
        }
        if var report {
            report["filename"] = reportFilename
            events.append(WebhookEvent(type: "recording.report", sessionID: sessionID, envelope: envelope(report), data: report,
                                       recbot: ["repaired": true, "end_reason": report["end_reason"] ?? "crashed"], timestampMilliseconds: now,
                                       nodeName: nodeName, version: version))
        }
        return events
    }
}
