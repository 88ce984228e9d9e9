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
            enlarged (--layout), or as a hisui layout file places them (--layout-file). The output is \
            VP8 or VP9 with Opus, the chat as WebVTT beside it.
            """ + ExitStatus.helpLine([.success, .notFound, .storage, .configuration, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hostOptions: HostOptions
    @Argument(help: "The session id (a 26-character ULID).") var session: ULIDArgument
    @Option(help: ArgumentHelp("The file to write (default: composed-<session>.webm in the session's directory).", valueName: "path"))
    var out: String?
    @Option(help: ArgumentHelp("grid: everyone present on an automatic grid; speaker: the sender speaking now enlarged, the others in a row below.",
                               valueName: "grid|speaker")) var layout: CompositionLayout = .grid
    @Option(help: ArgumentHelp("A hisui layout file (JSON or JSONC): its regions, sources, resolution, codec, bitrate, frame rate and trim.",
                               valueName: "path")) var layoutFile: String?
    @Option(help: "Width of the composition in pixels (default 1280).") var width: Int?
    @Option(help: "Height of the composition in pixels (default 720).") var height: Int?
    @Option(help: "Frames per second (default 30).") var fps: Int?
    @Option(help: ArgumentHelp("The video codec (default vp8).", valueName: "vp8|vp9")) var codec: VPXCodec?
    @Option(help: ArgumentHelp("Video bitrate in kbit/s (default 2500).", valueName: "kbps")) var bitrate: Int?
    @Option(help: ArgumentHelp("Start this far into the session (90s, 1m30s), or at this time (2026-11-22T10:15:00+09:00, 2026-11-22 10:15).",
                               valueName: "offset|time")) var from: SessionMomentArgument?
    @Option(help: ArgumentHelp("End this far into the session, or at this time.", valueName: "offset|time")) var to: SessionMomentArgument?
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        if let width, let height {
            guard (16...7_680).contains(width), (16...4_320).contains(height), width % 2 == 0, height % 2 == 0 else {
                throw ValidationError("--width and --height must be even, from 16x16 to 7680x4320")
            }
        } else if width != nil || height != nil {
            throw ValidationError("--width and --height go together")
        }
        if let fps { guard (1...60).contains(fps) else { throw ValidationError("--fps must be from 1 to 60") } }
        if let bitrate { guard (50...50_000).contains(bitrate) else { throw ValidationError("--bitrate must be from 50 to 50000 kbit/s") } }
        if case .offset(let start)? = from, case .offset(let end)? = to, end <= start { throw ValidationError("--to must be later than --from") }
        if case .time(let start)? = from, case .time(let end)? = to, end <= start { throw ValidationError("--to must be later than --from") }
        if layoutFile != nil {
            guard width == nil, fps == nil, codec == nil, bitrate == nil else {
                throw ValidationError("--width, --height, --fps, --codec and --bitrate come from the layout file with --layout-file")
            }
            guard layout == .grid else { throw ValidationError("--layout and --layout-file are different layouts: give one") }
        }
    }

    /// The settings from the options (a layout file's are applied over them in `run`).
    var optionSettings: CompositionSettings {
        var settings = CompositionSettings()
        settings.layout = layout
        settings.width = width ?? settings.width
        settings.height = height ?? settings.height
        settings.framesPerSecond = fps ?? settings.framesPerSecond
        settings.videoCodec = codec ?? settings.videoCodec
        settings.videoBitrateKbps = bitrate ?? settings.videoBitrateKbps
        return settings
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
        var settings = optionSettings
        (settings.from, settings.to) = (from?.offset(sessionStart: record.startedAt), to?.offset(sessionStart: record.startedAt))
        var chosen = CompositionFiles.choose(recordings)
        if let layoutFile {
            let plan = try hisuiPlan(layoutFile, session: record, recordings: recordings)
            settings.apply(plan)
            chosen = CompositionFiles.choose(recordings, by: plan)
        }
        var senders: [(connectionID: String, files: [SourceFile])] = []
        do {
            for (connectionID, files) in chosen {
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
        let layout = dataDirectory.layout(session: id)
        let path = URL(fileURLWithPath: out ?? layout.path(of: layout.compositionFilename)).standardizedFileURL.path
        let showProgress = isatty(STDERR_FILENO) == 1 && !json
        let result: CompositionResult
        let cues: [CaptionCue]
        do {
            let composer = try Composer(senders: senders, settings: settings)
            cues = captionCues(session: record, messages: messages, connections: connections, timeline: composer.timeline)
            result = try composer.run(to: path, captions: cues.map { ($0.start, $0.end, $0.text) }) { share in
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
        let captions = try writeCaptions(session: record, cues: cues, beside: result)
        try catalog.query { c throws(CatalogError) in
            try c.saveComposition(catalogRow(session: id, result: result, settings: settings, captions: captions, host: host))
        }
        if json {
            Console.print(JSONValue.object([
                ("path", .string(result.path)), ("captions", .string(captions)), ("duration_ms", .int(result.durationMilliseconds)), ("video_frames", .int(Int64(result.videoFrames))),
                ("audio_frames", .int(Int64(result.audioFrames))), ("senders", .int(Int64(result.senders))), ("decode_errors", .int(Int64(result.decodeErrors))),
                ("caption_cues", .int(Int64(result.captionCues))),
                ("speakers", .array(result.speakerChanges.map { .object([("at_ms", .int($0.at)), ("connection_id", .string($0.connectionID))]) })),
            ]).rendered())
        } else {
            Console.print(result.path)
            if let captions { Console.print(captions) }
        }
    }

    private func catalogRow(session: String, result: CompositionResult, settings: CompositionSettings, captions: String?, host: String) -> CompositionRecord {
        let dataDirectory = common.dataDirectory
        let size = (try? FileManager.default.attributesOfItem(atPath: result.path)[.size] as? NSNumber)?.int64Value
        return CompositionRecord(
            sessionID: session, path: dataDirectory.catalogPath(absolute: result.path) ?? result.path,
            captionsPath: captions.map { dataDirectory.catalogPath(absolute: $0) ?? $0 }, layout: layoutName, fromMs: result.startMilliseconds,
            durationMs: result.durationMilliseconds, width: settings.width, height: settings.height, fps: settings.framesPerSecond,
            videoCodec: settings.videoCodec == .vp8 ? "VP8" : "VP9",
            audioCodec: "OPUS", senders: result.senders, bytes: size, host: host, composedAt: Int64(Date().timeIntervalSince1970 * 1000))
    }

    /// The session's chat on the composition's timeline (following a hisui layout's cuts).
    private func captionCues(session: SessionRecord, messages: [EventRecord], connections: [ConnectionRecord], timeline: CompositionTimeline) -> [CaptionCue] {
        MessageCaptions.cues(length: timeline.length, events: messages, options: CaptionOptions(names: SenderNames(connections: connections))) {
            CatalogTime.span(from: session.startedAt, to: $0).flatMap(timeline.outputTime(at:))
        }
    }

    /// The chat beside the composition too, for players that take a .vtt (its path; nil when
    /// no message falls within it, and a stale file from an earlier run is removed).
    private func writeCaptions(session: SessionRecord, cues: [CaptionCue], beside result: CompositionResult) throws -> String? {
        let path = ArchiveLayout.captionsPath(besideComposition: result.path)
        guard let text = MessageCaptions.document(sessionID: session.id, cues: cues) else {
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
