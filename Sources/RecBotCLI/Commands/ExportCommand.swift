import Archive
import ArgumentParser
import DiskLayout
import Foundation
import Outcomes
import SessionExport

extension ExportFormat: ExpressibleByArgument {}

struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a session's events on its media timeline: events.jsonl and WebVTT captions per recording.",
        discussion: """
            events.jsonl holds every notify, push and data-channel message of the session, one
            JSON object a line, with its time (received_at, RFC 3339 UTC) and its offset in
            milliseconds from the session's start (session_offset_ms). Each recording that
            overlaps a message gets archive-<id>.messages.vtt (split parts: split-archive-<id>_NNNN.messages.vtt):
            the text messages of the session's messaging channels (labels starting with "#"),
            sender and label in each cue, cue times on that file's own timeline, so a browser or
            VLC shows the chat over the video. Binary messages appear as a short description.
            By default the files go into the session's recordings directory, where
            `recbot upload` finds them.

            """ + ExitStatus.helpLine([.success, .notFound, .storage, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @Argument(help: "The session id (a 26-character ULID).") var session: ULIDArgument
    @Option(help: ArgumentHelp("What to write (repeatable; default both).", valueName: "jsonl|webvtt"))
    var format: [ExportFormat] = []
    @Option(help: ArgumentHelp("The directory to write into (default: the session's recordings directory).", valueName: "dir"))
    var out: String?
    @Flag(help: "Also show connection.created / connection.destroyed in the captions.") var connectionEvents = false

    func run() throws {
        guard let catalog = try common.openCatalogForQuery() else { throw CommandEnd(cause: .notFound) }
        let written = try SessionExporter(catalog: catalog, dataDirectory: common.dataDirectory)
            .export(session.value, formats: Set(format.isEmpty ? ExportFormat.allCases : format), into: out,
                    captions: CaptionOptions(connectionEvents: connectionEvents))
        for path in written { Console.print(path) }
    }
}

/// Reads a session's records and writes its export (`recbot export`, `recbot join --export`).
struct SessionExporter {
    let catalog: any CatalogStore
    let dataDirectory: DataDirectory

    /// The paths written; a missing session ends the command as not found, a write failure as storage.
    func export(_ sessionID: String, formats: Set<ExportFormat>, into directory: String?,
                captions: CaptionOptions = CaptionOptions()) throws -> [String] {
        let found = try catalog.query { c throws(CatalogError) -> (SessionRecord, [EventRecord], [RecordingRecord], [ConnectionRecord])? in
            guard let session = try c.session(id: sessionID) else { return nil }
            return (session, try c.events(EventFilter(sessionID: sessionID)), try c.recordings(RecordingFilter(sessionID: sessionID)),
                    try c.connections(sessionID: sessionID))
        }
        guard let (session, events, recordings, connections) = found else { throw Console.fail("no session \(sessionID)", cause: .notFound) }
        var captions = captions
        captions.names = SenderNames(connections: connections)
        let files = SessionExport.files(session: session, events: events, recordings: recordings, formats: formats, captions: captions)
        let target = directory ?? dataDirectory.layout(session: sessionID).directory
        do {
            return try SessionExport.write(files, to: target)
        } catch {
            throw Console.fail("cannot write the export of session \(sessionID) to \(target): \(error.localizedDescription)", cause: .storageFailed)
        }
    }
}
