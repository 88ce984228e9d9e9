import Archive
import ArchivePostgres
import ArgumentParser
import DiskLayout
import Foundation
import Logging
import Outcomes
import Recorder
import SystemClock
import Verification
import WireCoding

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Read recordings with libwebm's parser and decode every frame.",
        discussion: """
            TARGET is a session id (all its recordings), a recording id (the ID column of
            `recordings list`), or the path of a WebM file. --pending verifies every finished
            recording of this host not verified yet (for cron; --all-hosts: every host's).
            Results of cataloged recordings are stored: `recordings list` then shows verified /
            failed. A file that is not where its host keeps it is `missing` (stored, and it never
            replaces an earlier verdict); one deleted after its upload is `uploaded`; one on
            another host's disk is left to that host.

            """ + ExitStatus.helpLine([.success, .dataError, .notFound, .storage, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: ArgumentHelp("Session ids, recording ids or file paths.", valueName: "target")) var targets: [String] = []
    @Flag(help: "Verify every finished recording of this host that has not been verified yet.") var pending = false
    @Flag(help: "With --pending: every host's recordings (a file not on this disk is reported, not judged).") var allHosts = false
    @OptionGroup var hostOptions: HostOptions
    @Option(help: "Files read at once (each decodes on one core); catalog writes stay one at a time.")
    var jobs = 1

    func validate() throws {
        if targets.isEmpty && !pending { throw ValidationError("name a session, a recording or a file, or pass --pending") }
        if !(1...64).contains(jobs) { throw ValidationError("--jobs is 1 to 64") }
    }

    func run() throws {
        let directory = common.dataDirectory
        let host = try hostOptions.name(settings: try common.settings())
        let catalog = try openCatalog(directory)
        var items: [VerifyItem] = []
        for target in targets { items += try resolve(target, catalog: catalog, directory: directory) }
        if pending, let catalog {
            let filter = RecordingFilter(unverifiedOnly: true, host: allHosts ? nil : host)
            items += try catalog.query { c throws(CatalogError) in try c.recordings(filter) }
                .map { VerifyItem($0, in: directory) }
        }
        let reports = ParallelReads.map(items.map { $0.confined ? $0.path : nil }, jobs: jobs) { path in
            FileManager.default.fileExists(atPath: path) ? RecordingVerifier.verify(path: path) : nil
        }
        var results: [(VerifyItem, VerifyOutcome)] = []
        for (item, report) in zip(items, reports) {
            results.append((item, try check(item, report: report, host: host, catalog: catalog)))
        }
        if output.json {
            Console.print(JSONValue.array(results.map { VerifyCommand.json($0.0, $0.1) }).rendered())
        } else {
            Console.print(VerifyCommand.table(results).rendered())
            for (item, outcome) in results { VerifyCommand.printProblems(item, outcome) }
        }
        if results.contains(where: { $0.1.isFailure }) { throw CommandEnd(cause: .verificationFailed) }
        if results.contains(where: { $0.1.isMissing }) { throw CommandEnd(cause: .notFound) }
    }

    /// Stores the report of a file that was read; otherwise says why it was not, and judges nothing.
    private func check(_ item: VerifyItem, report: VerificationReport?, host: String, catalog: (any CatalogStore)?) throws -> VerifyOutcome {
        guard item.confined else { return .refused }
        if let report {
            if let catalog, let id = item.recording?.id { try store(report, recordingID: id, in: catalog) }
            return .read(report)
        }
        guard let recording = item.recording, let catalog else { return .missing }
        if let owner = recording.host, owner != host { return .elsewhere(host: owner) }
        let name = (recording.path as NSString).lastPathComponent
        let uploads = try catalog.query { c throws(CatalogError) in try c.uploads(UploadFilter(sessionID: recording.sessionID)) }
        if let upload = uploads.first(where: { $0.fileName == name && $0.status == .uploaded && $0.localDeletedAt != nil }) {
            return .uploaded(objectURL: upload.objectURL)
        }
        if let id = recording.id {
            let now = SystemTimeSource().wallClockMilliseconds()
            try catalog.query { c throws(CatalogError) in try c.recordMissing(recordingID: id, at: now) }
        }
        return .missing
    }

    struct VerifyItem {
        var recording: RecordingRecord?
        var path: String
        /// False for a catalog row that names a file recbot never writes (`DataDirectory.recordingFile`): not read.
        var confined = true

        init(recording: RecordingRecord?, path: String) { (self.recording, self.path) = (recording, path) }

        init(_ recording: RecordingRecord, in directory: DataDirectory) {
            self.recording = recording
            let file = directory.recordingFile(catalogPath: recording.path, sessionID: recording.sessionID, connectionID: recording.connectionID)
            path = file ?? directory.absolute(catalogPath: recording.path)
            confined = file != nil
        }
    }

    /// The catalog, when there is one (a file can be verified without it).
    private func openCatalog(_ directory: DataDirectory) throws -> (any CatalogStore)? {
        let location = try common.catalogLocation(settings: try common.settings())
        do { return try location.openExisting(logger: Logger(label: "recbot.catalog")) } catch {
            throw Console.fail(error, cause: error.endCause)
        }
    }

    /// A recording id, a session id, or a file (matched to its catalog row when it has one).
    private func resolve(_ target: String, catalog: (any CatalogStore)?, directory: DataDirectory) throws -> [VerifyItem] {
        if let id = Int64(target) {
            guard let catalog, let recording = try catalog.query({ c throws(CatalogError) in try c.recording(id: id) }) else {
                throw Console.fail("no recording \(id) in the catalog", cause: .notFound)
            }
            return [VerifyItem(recording, in: directory)]
        }
        if let session = ULIDArgument(argument: target), !FileManager.default.fileExists(atPath: target) {
            let recordings = try catalog?.query { c throws(CatalogError) in try c.recordings(RecordingFilter(sessionID: session.value)) } ?? []
            guard !recordings.isEmpty else { throw Console.fail("no recordings of session \(session.value)", cause: .notFound) }
            return recordings.map { VerifyItem($0, in: directory) }
        }
        let absolute = URL(fileURLWithPath: target).standardizedFileURL.path
        let recording = try directory.catalogPath(absolute: absolute).flatMap { relative in
            try catalog?.query { c throws(CatalogError) in try c.recording(path: relative) }
        }
        return [VerifyItem(recording: recording, path: absolute)]
    }

    private func store(_ report: VerificationReport, recordingID: Int64, in catalog: any CatalogStore) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = (try? encoder.encode(report)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let now = SystemTimeSource().wallClockMilliseconds()
        try catalog.query { c throws(CatalogError) in
            try c.recordVerification(recordingID: recordingID, status: report.ok ? .verified : .failed, at: now, report: text)
        }
    }

    static func json(_ item: VerifyItem, _ outcome: VerifyOutcome) -> JSONValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = outcome.report.flatMap { try? encoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? "null"
        var fields: [(String, JSONValue)] = [
            ("recording_id", .int(item.recording?.id)), ("session_id", .string(item.recording?.sessionID)),
            ("path", .string(item.path)), ("verification", .string(outcome.name)), ("report", .raw(text)),
        ]
        switch outcome {
        case .elsewhere(let host): fields.append(("host", .string(host)))
        case .uploaded(let url): fields.append(("object_url", .string(url)))
        case .read, .missing, .refused: break
        }
        return .object(fields)
    }

    static func table(_ results: [(VerifyItem, VerifyOutcome)]) -> TextTable {
        var table = TextTable([
            ("ID", .right), ("FILE", .left), ("TRACK", .left), ("FRAMES", .right), ("DECODED", .right), ("ERRORS", .right),
            ("FIRST", .right), ("LAST", .right), ("GAPS>1S", .right), ("GRID", .right), ("OFF-GRID", .right), ("A/V", .right), ("RESULT", .left),
        ])
        for (item, outcome) in results {
            let file = (item.path as NSString).lastPathComponent
            guard case .read(let report) = outcome else {
                table.add([item.recording?.id.map(String.init), file, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, outcome.summary])
                continue
            }
            let result = outcome.summary
            let offset = report.audioVideoStartOffsetMilliseconds.map { "\($0) ms" }
            if report.tracks.isEmpty { table.add([item.recording?.id.map(String.init), file, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, result]) }
            for (index, track) in report.tracks.enumerated() {
                table.add([
                    index == 0 ? item.recording?.id.map(String.init) : nil, index == 0 ? file : nil,
                    "\(track.number) \(track.codecID)", String(track.frames), String(track.decoded), String(track.decodeErrors),
                    track.firstTimestampMilliseconds.map(seconds), track.lastTimestampMilliseconds.map(seconds), String(track.gapCount),
                    track.timeline.frameIntervalMilliseconds.map { String(format: "%.1f ms", $0) }, String(track.timeline.offGridSteps),
                    index == 0 ? offset : nil, index == 0 ? result : nil,
                ])
            }
        }
        return table
    }

    static func seconds(_ milliseconds: Int64) -> String { String(format: "%.3f s", Double(milliseconds) / 1000) }

    /// Why a file failed, and warnings, under the table (stderr keeps stdout a clean table).
    static func printProblems(_ item: VerifyItem, _ outcome: VerifyOutcome) {
        let file = (item.path as NSString).lastPathComponent
        guard case .read(let report) = outcome else {
            if outcome.isMissing { Console.note("\(file): not found at \(item.path)") }
            return
        }
        if let error = report.error { Console.note("\(file): \(error)") }
        for rule in report.readerRuleViolations { Console.note("\(file): reader rule: \(rule)") }
        for track in report.tracks { for sample in track.errorSamples { Console.note("\(file): track \(track.number): \(sample)") } }
        for track in report.tracks where track.timeline.offGridSteps > 0 {
            let grid = track.timeline.frameIntervalMilliseconds.map { String(format: "%.1f", $0) } ?? "?"
            Console.note("\(file): track \(track.number): \(track.timeline.offGridSteps) steps off its \(grid) ms frame grid "
                         + "(\(track.timeline.offGridSamples.joined(separator: ", "))); not an error for a sender whose frame rate varies")
        }
        for warning in report.warnings { Console.note("\(file): warning: \(warning)") }
    }
}

/// What `verify` found for one recording.
enum VerifyOutcome {
    /// The file was read and judged (verified or failed).
    case read(VerificationReport)
    /// The file is not where this host keeps it.
    case missing
    /// The file is on another host's disk: that host verifies it.
    case elsewhere(host: String)
    /// The file was deleted after its upload was verified.
    case uploaded(objectURL: String)
    /// The catalog row names a file recbot never writes (outside the session's directory, or
    /// another sender's): not read, a failure of the catalog.
    case refused

    var report: VerificationReport? { if case .read(let report) = self { report } else { nil } }
    var isFailure: Bool {
        if case .refused = self { return true }
        return report.map { !$0.ok } ?? false
    }
    var isMissing: Bool { if case .missing = self { true } else { false } }

    /// The `verification` field of `--json`.
    var name: String {
        switch self {
        case .read(let report): report.ok ? "verified" : "failed"
        case .missing: "missing"
        case .elsewhere: "elsewhere"
        case .uploaded: "uploaded"
        case .refused: "refused"
        }
    }

    /// The table's RESULT column.
    var summary: String {
        switch self {
        case .read(let report): report.ok ? "verified" : "FAILED"
        case .missing: "MISSING"
        case .elsewhere(let host): "on \(host)"
        case .uploaded(let url): "uploaded to \(url), deleted here"
        case .refused: "REFUSED: the catalog names no file recbot writes"
        }
    }
}
