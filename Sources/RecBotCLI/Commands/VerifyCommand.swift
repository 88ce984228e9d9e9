import Archive
import ArchivePostgres
import ArgumentParser
import Foundation
import Logging
import RecBot
import Recorder
import Verification

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Read recordings with libwebm's parser and decode every frame.",
        discussion: """
            TARGET is a session id (all its recordings), a recording id (the ID column of
            `recordings list`), or the path of a WebM file. --pending verifies every finished
            recording not verified yet (for cron). Results of cataloged recordings are stored:
            `recordings list` then shows verified / failed.

            """ + ExitStatus.helpLine([.success, .dataError, .storage, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: ArgumentHelp("Session ids, recording ids or file paths.", valueName: "target")) var targets: [String] = []
    @Flag(help: "Verify every finished recording that has not been verified yet.") var pending = false

    func validate() throws {
        if targets.isEmpty && !pending { throw ValidationError("name a session, a recording or a file, or pass --pending") }
    }

    func run() throws {
        let directory = common.dataDirectory
        let catalog = try openCatalog(directory)
        var items: [VerifyItem] = []
        for target in targets { items += try resolve(target, catalog: catalog, directory: directory) }
        if pending, let catalog {
            items += try catalog.query { c throws(CatalogError) in try c.recordings(RecordingFilter(unverifiedOnly: true)) }
                .map { VerifyItem(recording: $0, path: directory.absolute(catalogPath: $0.path)) }
        }
        var results: [(VerifyItem, VerificationReport)] = []
        for item in items {
            let report = RecordingVerifier.verify(path: item.path)
            if let catalog, let id = item.recording?.id { try store(report, recordingID: id, in: catalog) }
            results.append((item, report))
        }
        if output.json {
            Console.print(JSONValue.array(results.map { VerifyCommand.json($0.0, $0.1) }).rendered())
        } else {
            Console.print(VerifyCommand.table(results).rendered())
            for (item, report) in results { VerifyCommand.printProblems(item, report) }
        }
        if results.contains(where: { !$0.1.ok }) { throw ExitStatus.dataError.exitCode }
    }

    struct VerifyItem {
        var recording: RecordingRecord?
        var path: String
    }

    /// The catalog, when there is one (a file can be verified without it).
    private func openCatalog(_ directory: DataDirectory) throws -> (any CatalogStore)? {
        let location = try common.catalogLocation(settings: try common.settings())
        do { return try location.openExisting(logger: Logger(label: "recbot.catalog")) } catch {
            throw Console.fail(error, status: ExitStatus(catalogError: error))
        }
    }

    /// A recording id, a session id, or a file (matched to its catalog row when it has one).
    private func resolve(_ target: String, catalog: (any CatalogStore)?, directory: DataDirectory) throws -> [VerifyItem] {
        if let id = Int64(target) {
            guard let catalog, let recording = try catalog.query({ c throws(CatalogError) in try c.recording(id: id) }) else {
                throw Console.fail(ValidationError("no recording \(id) in the catalog"), status: .usage)
            }
            return [VerifyItem(recording: recording, path: directory.absolute(catalogPath: recording.path))]
        }
        if let session = ULIDArgument(argument: target), !FileManager.default.fileExists(atPath: target) {
            let recordings = try catalog?.query { c throws(CatalogError) in try c.recordings(RecordingFilter(sessionID: session.value)) } ?? []
            guard !recordings.isEmpty else { throw Console.fail(ValidationError("no recordings of session \(session.value)"), status: .usage) }
            return recordings.map { VerifyItem(recording: $0, path: directory.absolute(catalogPath: $0.path)) }
        }
        let absolute = URL(fileURLWithPath: target).standardizedFileURL.path
        let prefix = directory.path + "/"
        let recording = absolute.hasPrefix(prefix)
            ? try catalog?.query { c throws(CatalogError) in try c.recording(path: String(absolute.dropFirst(prefix.count))) } : nil
        return [VerifyItem(recording: recording, path: absolute)]
    }

    private func store(_ report: VerificationReport, recordingID: Int64, in catalog: any CatalogStore) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = (try? encoder.encode(report)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try catalog.query { c throws(CatalogError) in
            try c.recordVerification(recordingID: recordingID, status: report.ok ? .verified : .failed, at: now, report: text)
        }
    }

    static func json(_ item: VerifyItem, _ report: VerificationReport) -> JSONValue {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = (try? encoder.encode(report)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        return .object([
            ("recording_id", .int(item.recording?.id)), ("session_id", .string(item.recording?.sessionID)),
            ("path", .string(item.path)), ("verification", .string(report.ok ? "verified" : "failed")), ("report", .raw(text)),
        ])
    }

    static func table(_ results: [(VerifyItem, VerificationReport)]) -> TextTable {
        var table = TextTable([
            ("ID", .right), ("FILE", .left), ("TRACK", .left), ("FRAMES", .right), ("DECODED", .right), ("ERRORS", .right),
            ("FIRST", .right), ("LAST", .right), ("GAPS>1S", .right), ("GRID", .right), ("OFF-GRID", .right), ("A/V", .right), ("RESULT", .left),
        ])
        for (item, report) in results {
            let file = (item.path as NSString).lastPathComponent
            let result = report.ok ? "verified" : "FAILED"
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
    static func printProblems(_ item: VerifyItem, _ report: VerificationReport) {
        let file = (item.path as NSString).lastPathComponent
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
