import Archive
import Composition
import Foundation
import Outcomes

/// `recbot compose --layout-file`: a hisui layout resolved against the session's files.
extension ComposeCommand {
    /// What the catalog calls the layout: grid, speaker, or `hisui:<file name>`.
    var layoutName: String {
        layoutFile.map { "hisui:" + URL(fileURLWithPath: $0).lastPathComponent } ?? layout.rawValue
    }

    /// Reads the layout and resolves it; a layout that cannot be used ends the command with
    /// exit code 78 (configuration), naming the key at fault.
    func hisuiPlan(_ path: String, session: SessionRecord, recordings: [RecordingRecord]) throws -> HisuiPlan {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Console.fail("cannot read the layout file \(path)", cause: .invalidConfiguration) }
        defer { try? handle.close() }
        let bytes = (try? handle.read(upToCount: 1 << 20 + 1)) ?? Data()
        do {
            let layout = try HisuiLayout(bytes: Array(bytes))
            if !layout.ignoredKeys.isEmpty {
                Console.note("layout: not applied: \(layout.ignoredKeys.joined(separator: ", ")) (recbot encodes with libvpx and libopus at its own settings)")
            }
            return try HisuiPlan(layout: layout, files: Self.hisuiFiles(session: session, recordings: recordings))
        } catch {
            throw Console.fail("layout file \(path): \(error)", cause: .invalidConfiguration)
        }
    }

    /// The session's files as a hisui layout names them: each file's sidecar name, its span
    /// on the session's timeline.
    static func hisuiFiles(session: SessionRecord, recordings: [RecordingRecord]) -> [HisuiSourceFile] {
        recordings.compactMap { recording in
            guard let start = CatalogTime.span(from: session.startedAt, to: recording.startedAt), let length = recording.durationMs else { return nil }
            return HisuiSourceFile(name: sidecarName(recording), connectionID: recording.connectionID, start: start, end: start + length)
        }
    }

    static func sidecarName(_ recording: RecordingRecord) -> String {
        URL(fileURLWithPath: recording.path).deletingPathExtension().lastPathComponent + ".json"
    }
}

extension CompositionFiles {
    /// The files a hisui plan plays, per sender.
    static func choose(_ recordings: [RecordingRecord], by plan: HisuiPlan) -> [(String, [RecordingRecord])] {
        let byName = Dictionary(recordings.map { (ComposeCommand.sidecarName($0), $0) }, uniquingKeysWith: { first, _ in first })
        return plan.files.keys.sorted().map { sender in
            (sender, (plan.files[sender] ?? []).compactMap { byName[$0.name] }.sorted { ($0.startedAt, $0.part) < ($1.startedAt, $1.part) })
        }
    }
}
