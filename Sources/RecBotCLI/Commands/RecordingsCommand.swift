import Archive
import ArgumentParser
import DiskLayout
import Recorder

struct RecordingsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recordings",
        abstract: "List recorded files (one WebM per sender connection and part) and compositions.",
        subcommands: [List.self, Show.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List recordings, oldest first.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Option(help: ArgumentHelp("Only recordings of this session.", valueName: "id")) var session: ULIDArgument?
        @Option(help: ArgumentHelp("Only recordings of this sender connection id.", valueName: "id")) var connection: String?
        @Option(help: "Only recordings of this channel.") var channel: String?
        @Option(help: "At most this many recordings.") var limit: Int?
        @Option(help: ArgumentHelp("What to list: the senders' files, or `recbot compose`'s files.", valueName: "recorded|composed"))
        var kind: Kind = .recorded

        enum Kind: String, ExpressibleByArgument, CaseIterable { case recorded, composed }

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
            if kind == .composed, connection != nil { throw ValidationError("--connection does not apply to --kind composed") }
        }

        func run() throws {
            if kind == .composed { return try listCompositions() }
            let filter = RecordingFilter(sessionID: session?.value, connectionID: connection, channelID: channel, limit: limit)
            let recordings = try common.openCatalogForQuery()?.query { catalog throws(CatalogError) in try catalog.recordings(filter) } ?? []
            let directory = common.dataDirectory
            if output.json {
                Console.print(JSONValue.array(recordings.map { .object(RecordJSON.recording($0, dataDirectory: directory)) }).rendered())
                return
            }
            Console.print(RecordingsCommand.table(recordings, dataDirectory: directory).rendered())
        }

        private func listCompositions() throws {
            let filter = CompositionFilter(sessionID: session?.value, channelID: channel, limit: limit)
            let compositions = try common.openCatalogForQuery()?.query { catalog throws(CatalogError) in try catalog.compositions(filter) } ?? []
            let directory = common.dataDirectory
            if output.json {
                Console.print(JSONValue.array(compositions.map { .object(RecordJSON.composition($0, dataDirectory: directory)) }).rendered())
                return
            }
            var table = TextTable([
                ("SESSION", .left), ("LAYOUT", .left), ("SIZE", .left), ("CODECS", .left), ("FROM", .right), ("DURATION", .right),
                ("SENDERS", .right), ("BYTES", .right), ("COMPOSED", .left), ("PATH", .left),
            ])
            for c in compositions {
                table.add([
                    c.sessionID, c.layout, "\(c.width)x\(c.height)@\(c.fps)", "\(c.videoCodec)+\(c.audioCodec)", HumanFormat.duration(milliseconds: c.fromMs),
                    HumanFormat.duration(milliseconds: c.durationMs), String(c.senders), HumanFormat.size(bytes: c.bytes),
                    HumanFormat.localTime(milliseconds: c.composedAt), directory.absolute(catalogPath: c.path),
                ])
            }
            Console.print(table.rendered())
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one recording with its reception counters.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The recording id (the ID column of `recordings list`).") var id: Int64

        func run() throws {
            guard let catalog = try common.openCatalogForQuery() else { throw CommandEnd(cause: .notFound) }
            guard let r = try catalog.query({ catalog throws(CatalogError) in try catalog.recording(id: id) }) else {
                throw Console.fail(CatalogError(path: catalog.location, reason: .notFound("recording \(id)")), cause: .notFound)
            }
            let directory = common.dataDirectory
            if output.json {
                Console.print(JSONValue.object(RecordJSON.recording(r, dataDirectory: directory)).rendered())
                return
            }
            Console.print(HumanFormat.fields([
                ("Recording", r.id.map(String.init)), ("Session", r.sessionID), ("Connection", r.connectionID),
                ("Path", directory.absolute(catalogPath: r.path)), ("Status", r.status.rawValue), ("Error", r.error),
                ("Part", r.part == 0 ? nil : "\(r.part) (split: the video codec changed)"),
                ("Codecs", codecs(r)),
                ("Video sizes", r.videoSizes?.replacingOccurrences(of: ",", with: ", ")),
                ("Started", HumanFormat.localTime(milliseconds: r.startedAt)), ("Ended", HumanFormat.localTime(milliseconds: r.endedAt)),
                ("Duration", HumanFormat.duration(milliseconds: r.durationMs)), ("Size", HumanFormat.size(bytes: r.bytes)),
                ("Frames", "\(r.videoFrames) video, \(r.audioFrames) audio"),
                ("Packets", "\(r.packetsReceived) received, \(r.packetsRecovered) recovered by retransmission, \(r.packetsLost) lost, "
                    + "\(r.packetsLate) late, \(r.packetsDuplicate) duplicate"),
                ("Requests", "\(r.nacksSent) sequence numbers NACKed, \(r.pliSent) PLI, \(r.firSent) FIR"),
                ("Frames dropped", "\(r.framesDropped) (\(r.framesDroppedIncomplete) incomplete, \(r.framesDroppedKeyframeWait) awaiting a keyframe, "
                    + "\(r.framesDroppedMalformed) malformed, \(r.framesDroppedRecorder) by the recorder)"),
                ("Jitter", r.jitterMs.map { "\($0) ms" }),
                ("Verification", verification(r) + (r.verifiedAt.flatMap { " at " + (HumanFormat.localTime(milliseconds: $0) ?? "") } ?? "")),
                ("Host", r.host),
                ("Missing", r.missingAt.flatMap { "not found on its host at " + (HumanFormat.localTime(milliseconds: $0) ?? "") }),
            ]))
        }
    }

    /// `recbot verify`'s verdict: verified, failed, or not verified; and `missing` when its
    /// last look did not find the file (beside the verdict, which stays).
    static func verification(_ r: RecordingRecord) -> String {
        let verdict = r.verification?.rawValue ?? "not verified"
        return r.missingAt == nil ? verdict : verdict + ", missing"
    }

    /// "VP8+OPUS"; refused video shows as "OPUS (H265 refused)".
    static func codecs(_ r: RecordingRecord) -> String {
        let recorded = [r.videoCodec, r.audioCodec].compactMap { $0 }.joined(separator: "+")
        guard let refused = r.videoRefused else { return recorded }
        return recorded + " (\(refused) refused)"
    }

    static func table(_ recordings: [RecordingRecord], dataDirectory: DataDirectory) -> TextTable {
        var table = TextTable([
            ("ID", .right), ("SESSION", .left), ("CONNECTION", .left), ("CODECS", .left), ("STARTED", .left),
            ("DURATION", .right), ("SIZE", .right), ("FRAMES V/A", .right), ("STATUS", .left), ("VERIFIED", .left), ("PATH", .left),
        ])
        for r in recordings {
            table.add([
                r.id.map(String.init), r.sessionID, r.connectionID, codecs(r), HumanFormat.localTime(milliseconds: r.startedAt),
                HumanFormat.duration(milliseconds: r.durationMs), HumanFormat.size(bytes: r.bytes),
                "\(r.videoFrames)/\(r.audioFrames)", r.status.rawValue, verification(r), dataDirectory.absolute(catalogPath: r.path),
            ])
        }
        return table
    }
}
