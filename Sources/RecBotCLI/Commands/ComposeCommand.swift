import Archive
import ArgumentParser
import CodecBindings
import Composition
import DiskLayout
import Foundation
import Outcomes
import SessionExport

extension VPXCodec: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "vp8": self = .vp8
        case "vp9": self = .vp9
        default: return nil
        }
    }
}

extension CompositionLayout: ExpressibleByArgument {}

/// `recbot compose SESSION`: the session as one WebM a person can watch (docs/compose.md).
struct ComposeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compose",
        abstract: "Compose a session's recordings into one WebM: whoever is present on a grid or around the speaker, every sender's audio mixed.",
        discussion: """
            Each sender's files are placed on the session's timeline by their start times (split \
            parts, rejoins and gaps included: a sender absent for a while leaves the grid, nothing is \
            stretched). VP8, VP9, AV1 and H.264 senders are drawn, on an automatic grid or with the speaker \
            enlarged (--layout). The output is VP8 or VP9 with Opus, the chat as WebVTT beside it.
            """ + ExitStatus.helpLine([.success, .notFound, .storage, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hostOptions: HostOptions
    @Argument(help: "The session id (a 26-character ULID).") var session: ULIDArgument
    @Option(help: ArgumentHelp("The file to write (default: composed-<session>.webm in the session's directory).", valueName: "path"))
    var out: String?
    @Option(help: ArgumentHelp("grid: everyone present on an automatic grid; speaker: the sender speaking now enlarged, the others in a row below.",
                               valueName: "grid|speaker")) var layout: CompositionLayout = .grid
    @Option(help: "Width of the composition in pixels.") var width = 1280
    @Option(help: "Height of the composition in pixels.") var height = 720
    @Option(help: "Frames per second.") var fps = 30
    @Option(help: ArgumentHelp("The video codec.", valueName: "vp8|vp9")) var codec: VPXCodec = .vp8
    @Option(help: ArgumentHelp("Video bitrate in kbit/s.", valueName: "kbps")) var bitrate = 2_500
    @Option(help: ArgumentHelp("Start this far into the session (90s, 1m30s).", valueName: "offset")) var from: DurationArgument?
    @Option(help: ArgumentHelp("End this far into the session.", valueName: "offset")) var to: DurationArgument?
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        guard (16...7_680).contains(width), (16...4_320).contains(height), width % 2 == 0, height % 2 == 0 else {
            throw ValidationError("--width and --height must be even, from 16x16 to 7680x4320")
        }
        guard (1...60).contains(fps) else { throw ValidationError("--fps must be from 1 to 60") }
        guard (50...50_000).contains(bitrate) else { throw ValidationError("--bitrate must be from 50 to 50000 kbit/s") }
        if let from, let to, to.milliseconds <= from.milliseconds { throw ValidationError("--to must be later than --from") }
    }

    func run() throws {
        // Opened to write: the composition is cataloged when it is complete.
        guard let catalog = try common.openCatalogForWriting() else { throw CommandEnd(cause: .notFound) }
        let host = try hostOptions.name(settings: try common.settings())
        let id = session.value
        let found = try catalog.query { c throws(CatalogError) -> (SessionRecord, [RecordingRecord], [EventRecord], [ConnectionRecord])? in
            guard let record = try c.session(id: id) else { return nil }
            return (record, try c.recordings(RecordingFilter(sessionID: id)), try c.events(EventFilter(sessionID: id, kind: .datachannel)),
                    try c.connections(sessionID: id))
        }
        guard let (record, recordings, messages, connections) = found else { throw Console.fail("no session \(id)", cause: .notFound) }
        let dataDirectory = common.dataDirectory
        var senders: [(connectionID: String, files: [SourceFile])] = []
        do {
            for (connectionID, files) in CompositionFiles.choose(recordings) {
                let sources = try files.compactMap { recording throws(CompositionError) -> SourceFile? in
                    guard let path = dataDirectory.recordingFile(catalogPath: recording.path, sessionID: id, connectionID: recording.connectionID),
                          FileManager.default.fileExists(atPath: path) else {
                        Console.note("skipped \(recording.path): not on this host's disk")
                        return nil
                    }
                    return try SourceFile(path: path, start: recording.startedAt - record.startedAt, durationMilliseconds: recording.durationMs)
                }
                senders.append((connectionID, sources))
            }
        } catch {
            throw Console.fail(error, cause: .storageFailed)
        }
        var settings = CompositionSettings()
        settings.layout = layout
        (settings.width, settings.height, settings.framesPerSecond, settings.videoCodec, settings.videoBitrateKbps) = (width, height, fps, codec, bitrate)
        (settings.from, settings.to) = (from?.milliseconds, to?.milliseconds)
        let layout = dataDirectory.layout(session: id)
        let path = URL(fileURLWithPath: out ?? layout.path(of: layout.compositionFilename)).standardizedFileURL.path
        let showProgress = isatty(STDERR_FILENO) == 1 && !json
        let result: CompositionResult
        do {
            result = try Composer(senders: senders, settings: settings).run(to: path) { share in
                if showProgress { StandardStreams.err(String(format: "\rcomposing %3.0f%%", share * 100)) }
            }
        } catch {
            if showProgress { StandardStreams.err("\n") }
            throw Console.fail(error, cause: .storageFailed)
        }
        if showProgress { StandardStreams.err("\n") }
        for (sender, codec) in result.undrawnVideo.sorted(by: { $0.key < $1.key }) {
            Console.note("\(sender): no \(codec) decoder could be opened; shown as a grey tile with its audio")
        }
        let captions = try writeCaptions(session: record, messages: messages, connections: connections, beside: result)
        try catalog.query { c throws(CatalogError) in
            try c.saveComposition(catalogRow(session: id, result: result, captions: captions, host: host))
        }
        if json {
            Console.print(JSONValue.object([
                ("path", .string(result.path)), ("captions", .string(captions)), ("duration_ms", .int(result.durationMilliseconds)), ("video_frames", .int(Int64(result.videoFrames))),
                ("audio_frames", .int(Int64(result.audioFrames))), ("senders", .int(Int64(result.senders))), ("decode_errors", .int(Int64(result.decodeErrors))),
                ("speakers", .array(result.speakerChanges.map { .object([("at_ms", .int($0.at)), ("connection_id", .string($0.connectionID))]) })),
            ]).rendered())
        } else {
            Console.print(result.path)
            if let captions { Console.print(captions) }
        }
    }

    private func catalogRow(session: String, result: CompositionResult, captions: String?, host: String) -> CompositionRecord {
        let dataDirectory = common.dataDirectory
        let size = (try? FileManager.default.attributesOfItem(atPath: result.path)[.size] as? NSNumber)?.int64Value
        return CompositionRecord(
            sessionID: session, path: dataDirectory.catalogPath(absolute: result.path) ?? result.path,
            captionsPath: captions.map { dataDirectory.catalogPath(absolute: $0) ?? $0 }, layout: layout.rawValue, fromMs: result.startMilliseconds,
            durationMs: result.durationMilliseconds, width: width, height: height, fps: fps, videoCodec: codec == .vp8 ? "VP8" : "VP9",
            audioCodec: "OPUS", senders: result.senders, bytes: size, host: host, composedAt: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// The chat on the composition's timeline, beside it (its path; nil when no message falls
    /// within it, and a stale file from an earlier run is removed).
    private func writeCaptions(session: SessionRecord, messages: [EventRecord], connections: [ConnectionRecord],
                               beside result: CompositionResult) throws -> String? {
        let path = ArchiveLayout.captionsPath(besideComposition: result.path)
        let options = CaptionOptions(names: SenderNames(connections: connections))
        guard let text = MessageCaptions.render(sessionID: session.id, start: session.startedAt + result.startMilliseconds,
                                                length: result.durationMilliseconds, events: messages, options: options) else {
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
        do {
            try ArchiveLayout.writeAtomically(Data(text.utf8), to: path)
        } catch {
            throw Console.fail("cannot write the composition's captions to \(path): \(error.localizedDescription)", cause: .storageFailed)
        }
        return path
    }
}

/// Which of a session's files make each sender's picture: the whole files (part 0) when the
/// session has them, else its split parts, in time order.
enum CompositionFiles {
    static func choose(_ recordings: [RecordingRecord]) -> [(String, [RecordingRecord])] {
        let bySender = Dictionary(grouping: recordings, by: \.connectionID)
        return bySender.keys.sorted().map { sender in
            let files = bySender[sender] ?? []
            let whole = files.filter { $0.part == 0 }
            return (sender, (whole.isEmpty ? files : whole).sorted { ($0.startedAt, $0.part) < ($1.startedAt, $1.part) })
        }
    }
}
