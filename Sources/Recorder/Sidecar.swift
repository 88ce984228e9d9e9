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
        ]
    }

    static func null(_ value: Any?) -> Any { value ?? NSNull() }

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
            "file_path": layout.directory + "/" + r.filename,
            "metadata_filename": r.sidecarFilename,
            "metadata_file_path": layout.directory + "/" + r.sidecarFilename,
            "size": r.size,
            "created_at": r.stoppedAtMilliseconds / 1000,
            "start_time": r.startedAtMilliseconds / 1000,
            "start_timestamp": rfc3339(milliseconds: r.startedAtMilliseconds),
            "stop_time": r.stoppedAtMilliseconds / 1000,
            "stop_timestamp": rfc3339(milliseconds: r.stoppedAtMilliseconds),
            "recbot_version": context.recbotVersion,
            "stats": [
                "video_frames": r.statistics.videoFrames,
                "audio_frames": r.statistics.audioFrames,
                "frames_dropped_out_of_order": r.statistics.framesDroppedForOrder,
                "frames_dropped_backpressure": r.statistics.framesDroppedForBackpressure,
                "frames_dropped_before_start": r.statistics.framesDroppedBeforeStart,
                "frames_dropped_awaiting_keyframe": r.statistics.framesDroppedAwaitingKeyframe,
                "frames_dropped_incomplete": r.reception.framesDropped.incomplete,
                "frames_dropped_waiting_for_keyframe": r.reception.framesDropped.waitingForKeyframe,
                "frames_dropped_malformed": r.reception.framesDropped.malformed,
                "frames_dropped_oversized": r.reception.framesDropped.oversized,
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
            ] as [String: Any],
        ]
        if r.part > 0 { object["split_index"] = ArchiveLayout.splitIndex(r.part) }
        if let refused = r.refusedVideoCodec { object["video_refused_codec"] = refused }
        if r.tracks.audioChannels != nil { object["audio_codec_type"] = "OPUS" }
        if let codec = r.tracks.videoCodec {
            object["video_codec_type"] = codec.rawValue
            object["video_width"] = null(r.videoWidth)
            object["video_height"] = null(r.videoHeight)
        }
        return object
    }

    public static func report(_ recordings: [FinishedRecording], failed: [String], context: SidecarContext, layout: ArchiveLayout,
                              startedAtMilliseconds: Int64, stoppedAtMilliseconds: Int64) -> [String: Any] {
        [
            "recording_id": context.recordingID,
            "channel_id": context.channelID,
            "session_id": null(context.soraSessionID),
            "split_only": false,
            "created_at": stoppedAtMilliseconds / 1000,
            "start_timestamp": rfc3339(milliseconds: startedAtMilliseconds),
            "stop_timestamp": rfc3339(milliseconds: stoppedAtMilliseconds),
            "file_written": !recordings.isEmpty,
            "archives": recordings.map { r -> [String: Any] in
                var entry: [String: Any] = [
                    "connection_id": r.connectionID,
                    "client_id": null(context.clientIDs[r.connectionID]),
                    "bundle_id": null(context.bundleIDs[r.connectionID]),
                    "filename": r.filename,
                    "metadata_filename": r.sidecarFilename,
                    "start_time_offset": r.startOffsetSeconds,
                    "stop_time_offset": r.stopOffsetSeconds,
                    "start_timestamp": rfc3339(milliseconds: r.startedAtMilliseconds),
                    "stop_timestamp": rfc3339(milliseconds: r.stoppedAtMilliseconds),
                    "size": r.size,
                ]
                if r.part > 0 {
                    entry["split_index"] = ArchiveLayout.splitIndex(r.part)
                    let last = recordings.filter { $0.connectionID == r.connectionID }.map(\.part).max() ?? r.part
                    entry["split_last_index"] = ArchiveLayout.splitIndex(last)
                }
                if let refused = r.refusedVideoCodec { entry["video_refused_codec"] = refused }
                return entry
            },
            "failed_archives": failed.map { ["connection_id": $0] },
            "recbot_version": context.recbotVersion,
            "bot_connection_id": null(context.botConnectionID),
            "end_reason": null(context.endReason),
        ]
    }
}
