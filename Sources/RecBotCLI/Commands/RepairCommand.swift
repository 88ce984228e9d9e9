import Archive
import ArgumentParser
import DiskLayout
import Foundation
import Outcomes
import Recorder
import Repair
import RecordingEvents
import SystemClock
import Webhooks
import WireCoding

struct RepairCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Finish what a killed `recbot join` left: finalize its files, write sidecars and the report.",
        discussion: """
            Repairs sessions that never ended (or have files still marked `recording`) whose
            process is gone: each unfinished WebM is rewritten into a finalized one (Duration,
            Cues, known sizes; a cluster cut short keeps its whole blocks), its recording is
            marked `repaired`, files the catalog never heard of are added, and the session ends
            as `crashed`. Sessions whose recbot still runs on this host are left alone, so it is
            safe to run beside other joins (the systemd unit runs it before each join).
            Idempotent. First, catalog writes a join kept in its spool (data-dir/spool/) because
            a PostgreSQL catalog was unreachable are applied, in order. Last, webhooks still
            queued (a killed join's) are sent, for at most --webhook-seconds.

            """ + ExitStatus.helpLine([.success, .notFound, .storage, .catalogUnavailable, .catalogCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var hostOptions: HostOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Webhooks") var webhookArguments: WebhookArguments
    @Option(name: .customLong("webhook-seconds"), help: "How long to spend sending queued webhooks (0: none).") var webhookSeconds: Int = 10
    @Argument(help: ArgumentHelp("Session ids to repair.", valueName: "session")) var sessions: [ULIDArgument] = []
    @Flag(help: "Repair every unfinished session.") var all = false
    @Flag(help: "Also repair a session recorded on another host (its process cannot be checked from here).") var force = false
    @Option(help: "With --all: only this channel's sessions (with --force, for a scheduler that runs one recorder per channel).")
    var channel: String?
    @Option(name: .customLong("lost-host"), help: ArgumentHelp(
        "A host that will not come back: flag its files still marked recording as interrupted (lost) instead of repairing anything.",
        valueName: "name"))
    var lostHost: String?

    func validate() throws {
        guard WebhookArguments.sendingSecondsRange.contains(webhookSeconds) else {
            throw ValidationError("--webhook-seconds must be between 0 and \(WebhookArguments.sendingSecondsRange.upperBound)")
        }
        if lostHost != nil {
            if !sessions.isEmpty || all { throw ValidationError("--lost-host repairs nothing: give it alone") }
            return
        }
        if sessions.isEmpty && !all { throw ValidationError("name a session, or pass --all") }
    }

    func run() async throws {
        if let lostHost { return try flagLost(lostHost) }
        let directory = common.dataDirectory
        guard let catalog = try common.openCatalogForWriting() else { return }
        let storageHost = try hostOptions.name(settings: try common.settings())
        let repair = SessionRepair(catalog: catalog, dataDirectory: directory, random: SystemRandom(), storageHost: storageHost)
        let held = try replaySpools(repair, catalog: catalog)
        var targets: [SessionRecord] = try catalog.query { c throws(CatalogError) in
            try SessionRepair(catalog: c, dataDirectory: directory, random: SystemRandom(), storageHost: storageHost).unfinishedSessions()
        }
        if let channel { targets = targets.filter { $0.channelID == channel } }
        if !sessions.isEmpty {
            targets = try sessions.map { id in
                guard let session = try catalog.query({ c throws(CatalogError) in try c.session(id: id.value) }) else {
                    throw Console.fail("no session \(id.value)", cause: .notFound)
                }
                return session
            }
        }
        // Repair judges what a session is missing from the catalog: not while its spool waits.
        targets.removeAll { held.contains($0.id) }
        var outcomes: [SessionRepairOutcome] = []
        for session in targets {
            // One session the catalog refuses a write for is reported; the others are still repaired.
            do throws(CatalogError) {
                outcomes.append(try repair.repair(session, force: force))
            } catch where !error.isRetryable && !Self.isCredentials(error) {
                outcomes.append(SessionRepairOutcome(sessionID: session.id, action: .failed, detail: "\(error)"))
            } catch {
                throw Console.fail(error, cause: error.endCause)
            }
        }
        if output.json {
            Console.print(JSONValue.array(outcomes.map(RepairCommand.json)).rendered())
        } else if outcomes.isEmpty {
            Console.note("nothing to repair")
        } else {
            Console.print(RepairCommand.table(outcomes).rendered())
        }
        for outcome in outcomes where outcome.action == .repaired { queueRepairWebhooks(outcome, catalog: catalog) }
        await sendQueuedWebhooks(catalog)
        if !held.isEmpty || outcomes.contains(where: { $0.action == .failed || $0.files.contains { $0.error != nil } }) {
            throw CommandEnd(cause: .storageFailed)
        }
    }

    /// A repaired session's end events, to the URLs its join was sending to (known from its
    /// queued or delivered rows): each finished file's sidecar, then the report.
    private func queueRepairWebhooks(_ outcome: SessionRepairOutcome, catalog: any CatalogStore) {
        guard let rows = try? catalog.webhooks(WebhookFilter(sessionID: outcome.sessionID)), !rows.isEmpty,
              let settings = try? webhookArguments.deliverySettings(try common.settings()) else { return }
        let layout = common.dataDirectory.layout(session: outcome.sessionID)
        let sidecars = outcome.files.filter { $0.error == nil }.compactMap { file -> [String: Any]? in
            guard case .media(let connectionID, let part) = ArchiveFile(name: (file.path as NSString).lastPathComponent) else { return nil }
            return Self.readJSON(layout.path(of: layout.sidecarFilename(connectionID: connectionID, part: part)))
        }
        // The end markers repair wrote (a marker the join wrote was announced by the join).
        let announced = Set(rows.filter { $0.eventType == "split-archive.end" }.compactMap { row in
            (try? JSONSerialization.jsonObject(with: Data(row.body.utf8)) as? [String: Any])?["connection_id"] as? String
        })
        let senders = Set(outcome.files.compactMap { file -> String? in
            guard case .media(let connectionID, let part) = ArchiveFile(name: (file.path as NSString).lastPathComponent), part > 0 else { return nil }
            return connectionID
        }).subtracting(announced)
        let splitEnds = senders.sorted().compactMap { Self.readJSON(layout.path(of: layout.splitEndFilename(connectionID: $0))) }
        let now = SystemTimeSource().wallClockMilliseconds()
        let events = SoraEvents(nodeName: ProcessInfo.processInfo.hostName, version: RecBotCommand.version)
            .repaired(sessionID: outcome.sessionID, sidecars: sidecars, splitEnds: splitEnds, report: Self.readJSON(layout.reportPath),
                      reportFilename: layout.reportFilename, now: now)
        var target = settings
        target.urls = Array(Set(rows.map(\.url))).sorted()
        do { try catalog.enqueueWebhooks(events.flatMap { $0.rows(settings: target, now: now) }) } catch {
            Console.note("webhooks for repaired session \(outcome.sessionID) not queued: \(error)")
        }
    }

    private static func readJSON(_ path: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// A killed join's webhooks wait in the outbox: sent now (each row knows its URL).
    private func sendQueuedWebhooks(_ catalog: any CatalogStore) async {
        guard webhookSeconds > 0, let pending = try? catalog.webhookCounts().pending, pending > 0,
              let settings = try? webhookArguments.deliverySettings(try common.settings()) else { return }
        let report = await WebhookSender.drainQueued(catalog, settings: settings, seconds: Double(webhookSeconds), clock: SystemTimeSource())
        Console.note("webhooks: \(report.delivered) of \(pending) queued delivered")
    }

    private static func isCredentials(_ error: CatalogError) -> Bool {
        if case .credentials = error.reason { true } else { false }
    }

    /// Applies the spools joins left; the sessions whose spool still holds writes.
    private func replaySpools(_ repair: SessionRepair, catalog: any CatalogStore) throws -> Set<String> {
        var held: Set<String> = []
        for replayed in try catalog.query({ _ throws(CatalogError) in try repair.replaySpools() }) {
            if replayed.applied > 0 { Console.note("applied \(replayed.applied) catalog writes spooled in \(replayed.path)") }
            for refusal in replayed.refused { Console.note("the catalog refused a spooled write: \(refusal)") }
            if let why = replayed.held {
                Console.note("kept \(replayed.path) and left session \(replayed.sessionID) unrepaired: \(why)")
                held.insert(replayed.sessionID)
            }
        }
        return held
    }

    /// `--lost-host`: the host's unfinished files flagged lost; open sessions named, for `--force`.
    private func flagLost(_ host: String) throws {
        guard let catalog = try common.openCatalogForWriting() else { throw CommandEnd(cause: .notFound) }
        let now = SystemTimeSource().wallClockMilliseconds()
        let flagged = try catalog.query { c throws(CatalogError) in try LostHost.flag(host, catalog: c, at: now) }
        if output.json {
            Console.print(JSONValue.array(flagged.map { row in
                .object([("session_id", .string(row.sessionID)), ("path", .string(row.path)), ("recording_id", .int(row.id))])
            }).rendered())
            return
        }
        guard !flagged.isEmpty else {
            Console.note("no file of host \(host) is still marked recording")
            return
        }
        var table = TextTable([("SESSION", .left), ("FILE", .left), ("RESULT", .left)])
        for row in flagged { table.add([row.sessionID, (row.path as NSString).lastPathComponent, "flagged lost"]) }
        Console.print(table.rendered())
        let open = try Set(flagged.map(\.sessionID)).sorted().filter { id in
            try catalog.query { c throws(CatalogError) in try c.session(id: id)?.endedAt == nil }
        }
        for id in open { Console.note("session \(id) is still open: `recbot repair --force \(id)` ends it, if nothing records it now") }
    }

    static func json(_ outcome: SessionRepairOutcome) -> JSONValue {
        .object([
            ("session_id", .string(outcome.sessionID)), ("action", .string(outcome.action.rawValue)), ("detail", .string(outcome.detail)),
            ("files", .array(outcome.files.map { file in
                .object([
                    ("path", .string(file.path)), ("repaired", .bool(file.repaired != nil && file.repaired?.wasComplete == false)),
                    ("video_frames", .int(file.repaired?.videoFrames)), ("audio_frames", .int(file.repaired?.audioFrames)),
                    ("bytes", .int(file.repaired.map { Int64(clamping: $0.size) })),
                    ("frames_out_of_range", .int(file.repaired.map { $0.framesOutOfRange })), ("error", .string(file.error)),
                    ("renamed_from", .string(file.renamedFrom)),
                ])
            })),
        ])
    }

    static func table(_ outcomes: [SessionRepairOutcome]) -> TextTable {
        var table = TextTable([("SESSION", .left), ("ACTION", .left), ("FILE", .left), ("FRAMES V/A", .right), ("RESULT", .left)])
        for outcome in outcomes {
            if outcome.files.isEmpty { table.add([outcome.sessionID, outcome.action.rawValue, nil, nil, outcome.detail]) }
            for (index, file) in outcome.files.enumerated() {
                var result = file.error ?? file.renamedFrom.map { "renamed from \($0): it is part 1 now" }
                    ?? (file.repaired?.wasComplete == true ? "already finalized" : "finalized")
                if let skipped = file.repaired?.framesOutOfRange, skipped > 0 {
                    result += " (\(skipped) frames left out: their time is beyond what WebM holds)"
                }
                table.add([index == 0 ? outcome.sessionID : nil, index == 0 ? outcome.action.rawValue : nil, (file.path as NSString).lastPathComponent,
                           file.repaired.map { "\($0.videoFrames)/\($0.audioFrames)" }, result])
            }
            if !outcome.files.isEmpty, let detail = outcome.detail { table.add([nil, nil, nil, nil, detail]) }
        }
        return table
    }
}
