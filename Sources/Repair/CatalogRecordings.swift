import Archive
import DiskLayout
import Foundation
import Recorder
import WebM

/// Files described from their catalog rows rather than from a live recorder: for the report
/// `recbot repair` writes, and for the one a join that continued another process's session
/// writes over every segment's files.
public enum CatalogRecordings {
    /// Per file (its catalog path): where the same sender's next split part starts. A part cut
    /// at a boundary holds video past it until the next keyframe, so its own length would
    /// overlap the next part; it stops where that one starts, as a finished join's does. Part 0
    /// (the whole file beside the parts) is not one of them.
    public static func nextPartStarts(_ rows: [RecordingRecord]) -> [String: Int64] {
        var starts: [String: Int64] = [:]
        for (_, parts) in Dictionary(grouping: rows.filter { $0.part > 0 }, by: \.connectionID) {
            let ordered = parts.sorted { $0.part < $1.part }
            for (part, next) in zip(ordered, ordered.dropFirst()) { starts[part.path] = next.startedAt }
        }
        return starts
    }

    /// A row as a finished recording; `file` adds what a repair read from the file itself.
    public static func finished(_ row: RecordingRecord, file: RepairedFile?, sessionStartedAt: Int64, layout: ArchiveLayout,
                                nextPartStart: Int64?) -> FinishedRecording {
        var statistics = RecordingStatistics()
        statistics.videoFrames = Int(row.videoFrames)
        statistics.audioFrames = Int(row.audioFrames)
        statistics.bytes = UInt64(max(0, row.bytes))
        statistics.videoSizes = (row.videoSizes ?? "").split(separator: ",").map(String.init)
        let name = (row.path as NSString).lastPathComponent
        let tracks = SenderTracks(videoCodec: row.videoCodec.flatMap { WebMVideoCodec(rawValue: $0) }, audioChannels: row.audioCodec == nil ? nil : file?.audioChannels ?? 2)
        return FinishedRecording.known(
            connectionID: row.connectionID, part: row.part, filename: name, layout: layout, tracks: tracks,
            videoSize: file.flatMap { f in f.videoWidth.flatMap { w in f.videoHeight.map { (w, $0) } } },
            recordingStartMilliseconds: sessionStartedAt, fileStartMilliseconds: row.startedAt,
            firstFrameMilliseconds: file?.firstMilliseconds ?? 0, durationMilliseconds: row.durationMs ?? 0,
            size: UInt64(max(0, row.bytes)), statistics: statistics, refusedVideoCodec: row.videoRefused, nextPartStartMilliseconds: nextPartStart)
    }

    /// A sender's part 0 in a session without split, once later parts follow it: its part 1
    /// (a join that rejoined renames it so itself; after a failover `recbot repair` does, where
    /// the file is). The row as it is, or will be, named.
    public static func asPartOne(_ row: RecordingRecord, layout: ArchiveLayout) -> RecordingRecord {
        guard row.part == 0 else { return row }
        var renamed = row
        renamed.part = 1
        let directory = (row.path as NSString).deletingLastPathComponent
        let name = layout.mediaFilename(connectionID: row.connectionID, part: 1)
        renamed.path = directory.isEmpty ? name : (directory as NSString).appendingPathComponent(name)
        return renamed
    }
}
