import DiskLayout
import Foundation

/// Session facts every sidecar and the report repeat.
public struct SidecarContext: Sendable {
    public var recordingID: String
    public var channelID: String
    public var soraSessionID: String?
    public var clientIDs: [String: String]  // sender connection id -> client id
    public var bundleIDs: [String: String]
    public var botConnectionID: String?
    public var recbotVersion: String
    public var endReason: String?
    /// Sora's `split_duration` and `split_only`, when the recording is time-split.
    public var splitDurationSeconds: Int64?
    public var splitOnly: Bool?
    /// The operator's `recording_metadata` (JSON text), repeated in every JSON file.
    public var recordingMetadata: String?

    public init(recordingID: String, channelID: String, soraSessionID: String?, clientIDs: [String: String] = [:],
                bundleIDs: [String: String] = [:], botConnectionID: String?, recbotVersion: String, endReason: String? = nil) {
        self.recordingID = recordingID
        self.channelID = channelID
        self.soraSessionID = soraSessionID
        self.clientIDs = clientIDs
        self.bundleIDs = bundleIDs
        self.botConnectionID = botConnectionID
        self.recbotVersion = recbotVersion
        self.endReason = endReason
    }
}

/// The `archive-<id>.json` sidecar and `report-<recording id>.json`, with Sora's field names.
public enum Sidecar {
    /// `split-archive-end-<id>.json`: written after a split sender's last part.
    public static func splitEnd(connectionID: String, lastPart: Int, context: SidecarContext) -> [String: Any] {
        [
            "connection_id": connectionID,
            "recording_id": context.recordingID,
            "channel_id": context.channelID,
            "session_id": null(context.soraSessionID),
            "client_id": null(context.clientIDs[connectionID]),
            "split_last_index": ArchiveLayout.splitIndex(lastPart),
            "recbot_version": context.recbotVersion,
            "recording_metadata": context.recordingMetadataValue,
        ]
    }

    static func null(_ value: Any?) -> Any { value ?? NSNull() }
}

extension SidecarContext {
    /// The metadata as a JSON value (null when none was given).
    public var recordingMetadataValue: Any {
        guard let text = recordingMetadata,
              let value = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) else { return NSNull() }
        return value
    }
}

extension Sidecar {
    public static func object(_ r: FinishedRecording, context: SidecarContext, layout: ArchiveLayout) -> [String: Any] {
        var object: [String: Any] = [
            "connection_id": r.connectionID,
            "audio": r.tracks.audioChannels != nil,
            "video": r.tracks.videoCodec != nil,
            "format": "webm",
            "start_time_offset": r.startOffsetSeconds,
            "stop_time_offset": r.stopOffsetSeconds,
            "start_time_offset_ms": r.startOffsetMilliseconds,
            "recording_id": context.recordingID,
            "channel_id": context.channelID,
            "session_id": null(context.soraSessionID),
            "client_id": null(context.clientIDs[r.connectionID]),
            "bundle_id": null(context.bundleIDs[r.connectionID]),
            "filename": r.filename,
            "file_path": layout.path(of: r.filename),
            "metadata_filename": r.sidecarFilename,
            "metadata_file_path": layout.path(of: r.sidecarFilename),
            "size": r.size,
            "created_at": r.stoppedAtMilliseconds / 1000,
            "start_time": r.startedAtMilliseconds / 1000,
            "start_timestamp": rfc3339(milliseconds: r.startedAtMilliseconds),
            "stop_time": r.stoppedAtMilliseconds / 1000,
            "stop_timestamp": rfc3339(milliseconds: r.stoppedAtMilliseconds),
            "recbot_version": context.recbotVersion,
            "recording_metadata": context.recordingMetadataValue,
            "stats": [
                "video_frames": r.statistics.videoFrames,
                "audio_frames": r.statistics.audioFrames,
                "frames_dropped_out_of_order": r.statistics.framesDroppedForOrder,
                "frames_dropped_backpressure": r.statistics.framesDroppedForBackpressure,
                "frames_dropped_after_write_error": r.statistics.framesDroppedAfterWriteError,
                "frames_dropped_before_start": r.statistics.framesDroppedBeforeStart,
                "frames_dropped_awaiting_keyframe": r.statistics.framesDroppedAwaitingKeyframe,
                "video_frames_superseded": r.statistics.videoFramesSuperseded,
                "video_keyframes_nudged": r.statistics.videoKeyframesNudged,
                "frames_dropped_incomplete": r.reception.framesDropped.incomplete,
                "frames_dropped_waiting_for_keyframe": r.reception.framesDropped.waitingForKeyframe,
                "frames_dropped_malformed": r.reception.framesDropped.malformed,
                "frames_dropped_oversized": r.reception.framesDropped.oversized,
                "video_pauses_overload": r.reception.overloadPauses,
                "packets_received": r.reception.packets,
                "packets_lost": r.reception.lost,
                "packets_recovered": r.reception.recovered,
                "packets_late": r.reception.lateArrivals,
                "packets_duplicate": r.reception.duplicates,
                "nacked_sequence_numbers": r.reception.nackedSequenceNumbers,
                "pli_sent": r.reception.pictureLossIndications,
                "fir_sent": r.reception.fullIntraRequests,
                "jitter_ms": (r.reception.jitterMilliseconds * 10).rounded() / 10,
                "video_sizes": r.statistics.videoSizes,
                "video_sizes_refused": r.statistics.videoSizesRefused,
            ] as [String: Any],
        ]
        if r.part > 0 { object["split_index"] = ArchiveLayout.splitIndex(r.part) }
        if let refused = r.refusedVideoCodec { object["video_refused_codec"] = refused }
        if let interruption = r.interruption { object["interrupted"] = interruption }  // cut short by a write error
        if !r.statistics.videoGaps.isEmpty {
            // Video left out on purpose (file time, ms): paused while recbot was past capacity.
            object["video_gaps"] = r.statistics.videoGaps.map { ["start_ms": $0.startMilliseconds, "stop_ms": $0.stopMilliseconds, "cause": $0.cause] }
        }
        if r.tracks.audioChannels != nil { object["audio_codec_type"] = "OPUS" }
        if !r.statistics.videoRotations.isEmpty {
            // Clockwise degrees the pictures must turn to show upright, from each offset (ms of the file).
            object["video_rotations"] = r.statistics.videoRotations.map { ["offset_ms": $0.offsetMilliseconds, "degrees": $0.rotation.rawValue] }
        }
        if let codec = r.tracks.videoCodec {
            object["video_codec_type"] = codec.rawValue
            object["video_width"] = null(r.videoWidth)
            object["video_height"] = null(r.videoHeight)
        }
        return object
    }

    /// One `archives` entry per sender, as Sora writes it: a split sender's entry spans its
    /// parts and names the last (`split_last_index`). `split_only` holds when every sender was
    /// split (a codec change on each); otherwise report-driven readers find unsplit senders
    /// through `metadata_filename`, and split ones through their first part's sidecar.
    public static func report(_ recordings: [FinishedRecording], failed: [String], context: SidecarContext, layout: ArchiveLayout,
                              startedAtMilliseconds: Int64, stoppedAtMilliseconds: Int64) -> [String: Any] {
        let senders = Dictionary(grouping: recordings, by: \.connectionID).map { $0.value.sorted { $0.part < $1.part } }
            .sorted { $0[0].connectionID < $1[0].connectionID }
        var report: [String: Any] = [
            "recording_id": context.recordingID,
            "channel_id": context.channelID,
            "session_id": null(context.soraSessionID),
            "split_only": context.splitOnly ?? (!senders.isEmpty && senders.allSatisfy { $0[0].part > 0 }),
            "created_at": stoppedAtMilliseconds / 1000,
            "start_timestamp": rfc3339(milliseconds: startedAtMilliseconds),
            "stop_timestamp": rfc3339(milliseconds: stoppedAtMilliseconds),
            "file_written": !recordings.isEmpty,
            "archives": senders.map { archiveEntry($0, context: context) },
            "failed_archives": failed.map { ["connection_id": $0] },
            "recbot_version": context.recbotVersion,
            "bot_connection_id": null(context.botConnectionID),
            "end_reason": null(context.endReason),
            "recording_metadata": context.recordingMetadataValue,
        ]
        if let seconds = context.splitDurationSeconds { report["split_duration"] = seconds }
        return report
    }

    /// A sender's entry from its files in part order: the whole-file archive when there is one
    /// (beside time-split parts, which the entry names by `split_last_index`), else its parts.
    static func archiveEntry(_ parts: [FinishedRecording], context: SidecarContext) -> [String: Any] {
        let described = parts[0].part == 0 ? [parts[0]] : parts
        let first = described[0], last = described[described.count - 1], lastPart = parts[parts.count - 1]
        var entry: [String: Any] = [
            "connection_id": first.connectionID,
            "client_id": null(context.clientIDs[first.connectionID]),
            "bundle_id": null(context.bundleIDs[first.connectionID]),
            "filename": first.filename,
            "metadata_filename": first.sidecarFilename,
            "start_time_offset": first.startOffsetSeconds,
            "stop_time_offset": last.stopOffsetSeconds,
            "start_timestamp": rfc3339(milliseconds: first.startedAtMilliseconds),
            "stop_timestamp": rfc3339(milliseconds: last.stoppedAtMilliseconds),
            "size": described.reduce(UInt64(0)) { $0 + $1.size },
        ]
        if lastPart.part > 0 { entry["split_last_index"] = ArchiveLayout.splitIndex(lastPart.part) }
        if let refused = first.refusedVideoCodec { entry["video_refused_codec"] = refused }
        return entry
    }
}
