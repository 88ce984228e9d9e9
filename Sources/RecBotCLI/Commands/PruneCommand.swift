import Archive
import ArchiveUpload
import ArgumentParser
import Foundation
import Logging
import ObjectStorage
import Retention

/// `recbot prune`: removes old sessions' files from this host, keeping their catalog rows.
struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove old sessions' files from this host (their catalog rows stay, marked pruned).",
        discussion: """
            Takes the sessions that started before --older-than, or whose own retention ended
            (--expired: `join --retention`, a rule's retention_days), and removes their files
            from this host's data directory. It never touches a session that is on hold
            (`recbot sessions hold`), still being recorded, has a file `recbot verify` has not
            passed, or has an upload that is not finished, or, when an upload destination is
            configured (RECBOT_UPLOAD_URL), has not been uploaded there. The catalog keeps every
            row, marked pruned; the events stay unless --events. --dry-run lists exactly what a
            prune would remove. Uploaded objects are removed only with --uploaded-objects.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var hostOptions: HostOptions
    @Option(name: .customLong("older-than"), help: ArgumentHelp("Sessions that started longer ago than this (30d, 12h …).", valueName: "age"))
    var olderThan: DurationArgument?
    @Flag(help: "Sessions whose own retention (`join --retention`) has ended.") var expired = false
    @Option(help: "Only this channel's sessions.") var channel: String?
    @Flag(name: .customLong("dry-run"), help: "List what would be removed, and remove nothing.") var dryRun = false
    @Flag(help: "Delete the sessions' events from the catalog too.") var events = false
    @Flag(name: .customLong("uploaded-objects"), help: ArgumentHelp(
        "Also delete the pruned sessions' objects from the upload destination (RECBOT_UPLOAD_URL, its endpoint and credentials)."))
    var uploadedObjects = false
    @Option(name: .customLong("metrics-textfile"), help: ArgumentHelp(
        "Write what this prune did for node_exporter's textfile collector (recbot_prune_*), atomically.", valueName: "path"))
    var metricsTextfile: String?

    func validate() throws {
        if olderThan == nil && !expired { throw ValidationError("say which sessions: --older-than AGE, --expired, or both") }
        if let olderThan, olderThan.milliseconds < 60_000 { throw ValidationError("--older-than must be at least a minute") }
    }

    func run() async throws {
        let settings = try common.settings()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var policy = PrunePolicy(startedBefore: olderThan.map { now - $0.milliseconds }, expiredBy: expired ? now : nil, channel: channel,
                                 host: try hostOptions.name(settings: settings), upload: try Self.uploadTarget(settings))
        policy.deleteEvents = events
        guard let catalog = try (dryRun ? common.openCatalogForQuery() : common.openCatalogForWriting()) else { return }
        let directory = common.dataDirectory
        let decisions = try catalog.query { c throws(CatalogError) in try PruneSelection(catalog: c, dataDirectory: directory).decisions(policy) }
        let outcomes = dryRun ? decisions.map { PruneOutcome(decision: $0) }
            : try catalog.query { c throws(CatalogError) in
                let pruner = SessionPruner(catalog: c, dataDirectory: directory)
                return decisions.map { pruner.prune($0, policy: policy, now: now) }
            }
        let removed = try await removeUploadedObjects(outcomes, settings: settings, catalog: catalog, now: now)
        if output.json {
            Console.print(JSONValue.array(outcomes.map { outcome in
                .object(Self.json(outcome, dryRun: dryRun) + [("objects_deleted", .int(removed[outcome.decision.session.id].map { Int64($0.objects) }))])
            }).rendered())
        } else {
            Console.print(Self.table(outcomes, dryRun: dryRun).rendered())
            for (id, objects) in removed.sorted(by: { $0.key < $1.key }) where objects.objects > 0 {
                Console.print("session \(id): \(objects.objects) uploaded object\(objects.objects == 1 ? "" : "s") (\(HumanFormat.size(bytes: objects.bytes) ?? "0 B")) "
                              + (dryRun ? "would be deleted" : "deleted"))
            }
            let pruned = outcomes.filter { $0.decision.verdict == .prune && $0.error == nil }
            let bytes = dryRun ? pruned.reduce(0) { $0 + $1.decision.bytes } : pruned.reduce(0) { $0 + $1.bytesFreed }
            Console.print("\(pruned.count) session\(pruned.count == 1 ? "" : "s") \(dryRun ? "would be pruned" : "pruned"), "
                          + "\(HumanFormat.size(bytes: bytes) ?? "0 B") \(dryRun ? "would be freed" : "freed"); "
                          + "\(outcomes.count - pruned.count) kept")
        }
        if let metricsTextfile {
            let text = PruneMetrics.render(outcomes, dryRun: dryRun, finishedAt: Int64(Date().timeIntervalSince1970 * 1000))
            do {
                let temporary = metricsTextfile + ".tmp"
                try text.write(toFile: temporary, atomically: false, encoding: .utf8)
                guard rename(temporary, metricsTextfile) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            } catch {
                Console.note("--metrics-textfile \(metricsTextfile): not written: \(error)")
                throw CommandEnd(cause: .storageFailed)
            }
        }
        if outcomes.contains(where: { $0.error != nil }) { throw CommandEnd(cause: .storageFailed) }
    }

    /// `--uploaded-objects`: per pruned session, its objects deleted (or, in a dry run, to delete).
    private func removeUploadedObjects(_ outcomes: [PruneOutcome], settings: Settings, catalog: any CatalogStore,
                                       now: Int64) async throws -> [String: (objects: Int, bytes: Int64)] {
        guard uploadedObjects else { return [:] }
        let configuration = try UploadArguments.parse([]).required(destination: nil, settings: settings, environment: ProcessInfo.processInfo.environment,
                                                                   missing: "--uploaded-objects needs the upload destination (RECBOT_UPLOAD_URL)")
        let client = configuration.makeClient(logger: Logger(label: "recbot.prune"))
        let removal = UploadedObjectRemoval(client: client, catalog: catalog, destination: configuration.options.destination)
        var removed: [String: (objects: Int, bytes: Int64)] = [:]
        var failure: (any Error)?
        for outcome in outcomes where outcome.decision.verdict == .prune && outcome.error == nil {
            let id = outcome.decision.session.id
            do {
                if dryRun {
                    let rows = try removal.objects(sessionID: id)
                    removed[id] = (rows.count, rows.reduce(0) { $0 + $1.bytes })
                } else {
                    removed[id] = try await removal.remove(sessionID: id, now: now)
                }
            } catch {
                Console.note("session \(id): uploaded objects not deleted: \(error)")
                failure = error
            }
        }
        await client.shutdown()
        if let failure = failure as? UploadError { throw CommandEnd(cause: failure.endCause) }
        return removed
    }

    /// The upload destination configured here: a session must reach it before it is pruned.
    static func uploadTarget(_ settings: Settings) throws -> PrunePolicy.UploadTarget? {
        guard let url = settings[.uploadURL] else { return nil }
        do {
            let destination = try S3Destination.parse(url)
            let endpoint = try S3Endpoint(url: settings[.s3Endpoint], region: settings[.s3Region] ?? ProcessInfo.processInfo.environment["AWS_REGION"])
            return PrunePolicy.UploadTarget(objectURLPrefix: destination.objectURLPrefix, endpoint: endpoint.description)
        } catch {
            throw ValidationError("RECBOT_UPLOAD_URL: \(error)")
        }
    }

    static func action(_ outcome: PruneOutcome, dryRun: Bool) -> String {
        if let error = outcome.error { return "failed: \(error)" }
        switch outcome.decision.verdict {
        case .prune: return dryRun ? "would prune" : "pruned"
        case .keep(let why): return "kept: \(why)"
        }
    }

    static func table(_ outcomes: [PruneOutcome], dryRun: Bool) -> TextTable {
        var table = TextTable([("SESSION", .left), ("CHANNEL", .left), ("STARTED", .left), ("FILES", .right), ("SIZE", .right), ("ACTION", .left)])
        for outcome in outcomes {
            let session = outcome.decision.session
            table.add([session.id, session.channelID, HumanFormat.localTime(milliseconds: session.startedAt), String(outcome.decision.files.count),
                       HumanFormat.size(bytes: outcome.decision.bytes), action(outcome, dryRun: dryRun)])
        }
        return table
    }

    static func json(_ outcome: PruneOutcome, dryRun: Bool) -> [(String, JSONValue)] {
        let decision = outcome.decision
        var kept: String?
        if case .keep(let why) = decision.verdict { kept = why }
        return [
            ("session_id", .string(decision.session.id)), ("channel_id", .string(decision.session.channelID)),
            ("action", .string(kept != nil ? "kept" : dryRun ? "would prune" : outcome.error == nil ? "pruned" : "failed")),
            ("reason", .string(kept)), ("files", .array(decision.files.map { .string($0) })), ("bytes", .int(decision.bytes)),
            ("bytes_freed", .int(dryRun ? nil : outcome.bytesFreed)), ("events_deleted", .int(outcome.mark.map { Int64($0.eventsDeleted) })),
            ("error", .string(outcome.error)),
        ]
    }
}
