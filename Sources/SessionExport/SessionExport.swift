import Archive
import DiskLayout
import Foundation

/// The formats `recbot export` writes.
public enum ExportFormat: String, CaseIterable, Sendable {
    case jsonl, webvtt
}

/// One file of an export: its name in the output directory and its contents.
public struct ExportedFile: Equatable, Sendable {
    public var name: String
    public var contents: String
}

/// A session's events on its media timeline: `events.jsonl` and one caption file per
/// recording. Pure: records in, files out; `write` puts them in a directory.
public enum SessionExport {
    public static func files(session: SessionRecord, events: [EventRecord], recordings: [RecordingRecord],
                             formats: Set<ExportFormat>, captions: CaptionOptions = CaptionOptions()) -> [ExportedFile] {
        var files: [ExportedFile] = []
        if formats.contains(.jsonl) {
            files.append(ExportedFile(name: ArchiveLayout(recordingsRoot: "", recordingID: session.id).eventLogFilename, contents: EventLog.render(session: session, events: events)))
        }
        if formats.contains(.webvtt) {
            for recording in recordings.sorted(by: { ($0.connectionID, $0.part) < ($1.connectionID, $1.part) }) {
                guard ArchiveLayout.isSafeConnectionID(recording.connectionID),
                      let text = MessageCaptions.render(recording: recording, events: events, options: captions) else { continue }
                let layout = ArchiveLayout(recordingsRoot: "", recordingID: session.id)
                files.append(ExportedFile(name: layout.messagesFilename(connectionID: recording.connectionID, part: recording.part), contents: text))
            }
        }
        return files
    }

    /// Writes each file atomically into `directory` (created if missing); returns their paths.
    public static func write(_ files: [ExportedFile], to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try files.map { file in
            let path = ArchiveLayout.join(directory, file.name)
            try ArchiveLayout.writeAtomically(Data(file.contents.utf8), to: path)
            return path
        }
    }
}
