import Archive
import ArgumentParser
import Foundation
import Recorder

struct SessionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "List and inspect recording sessions (one per `recbot join`).",
        subcommands: [List.self, Show.self, Hold.self, Unhold.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List sessions, newest first.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Option(help: "Only sessions of this channel.") var channel: String?
        @Option(help: ArgumentHelp("Only sessions started at or after this time (RFC 3339, YYYY-MM-DD[ HH:MM[:SS]] local, or an age such as 24h).", valueName: "time"))
        var since: TimeArgument?
        @Option(help: ArgumentHelp("Only sessions started before this time.", valueName: "time"))
        var until: TimeArgument?
        @Option(help: "At most this many sessions.") var limit: Int?

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
            if let since, let until, until.milliseconds <= since.milliseconds {
                throw ValidationError("--until must be later than --since")
            }
        }

        func run() throws {
            let filter = SessionFilter(channelID: channel, since: since?.milliseconds, until: until?.milliseconds, limit: limit)
            let sessions = try common.openCatalogForQuery()?.query { catalog throws(CatalogError) in try catalog.sessions(filter) } ?? []
            if output.json {
                Console.print(JSONValue.array(sessions.map { .object(RecordJSON.session($0)) }).rendered())
                return
            }
            Console.print(SessionsCommand.table(sessions).rendered())
        }
    }

    /// `recbot sessions hold`: kept from every prune until `unhold`.
    struct Hold: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Keep a session from `recbot prune` (and the service's retention) until `unhold`.")

        @OptionGroup var common: CommonOptions
        @Argument(help: "The session id.") var id: ULIDArgument
        @Option(help: "Why it is kept (shown by `prune` and `sessions show`).") var reason: String?

        func run() throws {
            try SessionsCommand.hold(id.value, at: Int64(Date().timeIntervalSince1970 * 1000), reason: reason, common: common)
            Console.print("session \(id.value) on hold: no prune removes it")
        }
    }

    struct Unhold: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Let `recbot prune` take a held session again.")

        @OptionGroup var common: CommonOptions
        @Argument(help: "The session id.") var id: ULIDArgument

        func run() throws {
            try SessionsCommand.hold(id.value, at: nil, reason: nil, common: common)
            Console.print("session \(id.value) no longer on hold")
        }
    }

    static func hold(_ id: String, at time: Int64?, reason: String?, common: CommonOptions) throws {
        guard let catalog = try common.openCatalogForWriting() else { throw Console.fail("no catalog", cause: .notFound) }
        guard try catalog.query({ c throws(CatalogError) in try c.holdSession(id: id, at: time, reason: reason) }) else {
            throw Console.fail("no session \(id)", cause: .notFound)
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a session with its connections, recordings and event counts.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Argument(help: "The session id (a 26-character ULID).") var id: ULIDArgument

        func run() throws {
            guard let catalog = try common.openCatalogForQuery() else { throw CommandEnd(cause: .notFound) }
            let found = try catalog.query { catalog throws(CatalogError) -> SessionDetails? in
                guard let session = try catalog.session(id: id.value) else { return nil }
                return SessionDetails(session: session, connections: try catalog.connections(sessionID: session.id),
                                      recordings: try catalog.recordings(RecordingFilter(sessionID: session.id)),
                                      counts: try catalog.eventCounts(sessionID: session.id),
                                      interruptions: try catalog.interruptions(sessionID: session.id))
            }
            guard let (session, connections, recordings, counts, interruptions) = found.map({
                ($0.session, $0.connections, $0.recordings, $0.counts, $0.interruptions)
            }) else {
                throw Console.fail(CatalogError(path: catalog.location, reason: .notFound("session \(id.value)")), cause: .notFound)
            }
            let directory = common.dataDirectory
            if output.json {
                var object = RecordJSON.session(session)
                object.append(("connections", .array(connections.map { .object(RecordJSON.connection($0)) })))
                object.append(("recordings", .array(recordings.map { .object(RecordJSON.recording($0, dataDirectory: directory)) })))
                object.append(("interruptions", .array(interruptions.map { .object(RecordJSON.interruption($0)) })))
                object.append(("event_counts", .object(EventKind.allCases.map { kind in
                    (kind.rawValue, .int(Int64(counts.first { $0.kind == kind }?.count ?? 0)))
                })))
                Console.print(JSONValue.object(object).rendered())
                return
            }
            let fields: [(String, String?)] = [
                ("Session", session.id), ("Channel", session.channelID), ("Sora session", session.soraSessionID),
                ("Connection", session.connectionID), ("Client", session.clientID), ("Signaling URL", session.signalingURL),
                ("Started", HumanFormat.localTime(milliseconds: session.startedAt)),
                ("On hold", session.heldAt.map { "since \(HumanFormat.localTime(milliseconds: $0) ?? "")" + (session.holdReason.map { ": \($0)" } ?? "") }),
                ("Retained until", HumanFormat.localTime(milliseconds: session.retainUntil)),
                ("Pruned", HumanFormat.localTime(milliseconds: session.prunedAt)),
                ("Segments", session.segment.map { "\($0) (a failover continued it)" }),
                ("Ended", HumanFormat.localTime(milliseconds: session.endedAt)),
                ("Duration", HumanFormat.duration(milliseconds: session.endedAt.flatMap { HumanFormat.span(from: session.startedAt, to: $0) })),
                ("End reason", session.endReason), ("Exit status", session.exitStatus.map(String.init)),
                ("Recordings", directory.layout(session: session.id).directory),
                ("Refused", SessionsCommand.refused(session)),
            ]
            var lines = [HumanFormat.fields(fields)]
            let width = fields.map(\.0.count).max() ?? 0
            let total = counts.reduce(0) { $0 + $1.count }
            let byKind = counts.map { "\($0.kind.rawValue) \($0.count)" }.joined(separator: ", ")
            lines.append("Events:" + String(repeating: " ", count: width - 5) + "\(total)" + (byKind.isEmpty ? "" : " (\(byKind))"))

            var connectionTable = TextTable([("CONNECTION", .left), ("CLIENT", .left), ("ROLE", .left), ("FIRST SEEN", .left), ("LEFT", .left)])
            for c in connections {
                connectionTable.add([c.connectionID, c.clientID, c.role, HumanFormat.localTime(milliseconds: c.firstSeenAt),
                                     HumanFormat.localTime(milliseconds: c.leftAt)])
            }
            lines.append("")
            lines.append("Connections (\(connections.count)):")
            lines.append(connectionTable.rendered())
            if !interruptions.isEmpty {
                lines.append("")
                lines.append("Interruptions (\(interruptions.count)):")
                lines.append(SessionsCommand.interruptionTable(interruptions).rendered())
            }
            lines.append("")
            lines.append("Recordings (\(recordings.count)):")
            lines.append(RecordingsCommand.table(recordings, dataDirectory: directory).rendered())
            Console.print(lines.joined(separator: "\n"))
        }
    }

    /// A session's catalog rows, read in one go.
    struct SessionDetails {
        var session: SessionRecord
        var connections: [ConnectionRecord]
        var recordings: [RecordingRecord]
        var counts: [EventCount]
        var interruptions: [InterruptionRecord]
    }

    /// One row per outage: when the connection was lost, how long until a rejoin recorded
    /// again, how many attempts that took and the media time it cost.
    static func interruptionTable(_ rows: [InterruptionRecord]) -> TextTable {
        var table = TextTable([("#", .right), ("LOST AT", .left), ("OUTAGE", .right), ("MEDIA LOST", .right), ("ATTEMPTS", .right),
                               ("CAUSE", .left), ("REJOINED AS", .left)])
        for row in rows {
            table.add([String(row.ordinal), HumanFormat.localTime(milliseconds: row.startedAt),
                       row.endedAt.map { String(format: "%.1f s", Double(max(0, $0 - row.startedAt)) / 1000) } ?? "not rejoined",
                       row.mediaLostMs.map { String(format: "%.1f s", Double($0) / 1000) }, String(row.attempts), row.cause,
                       row.connectionID])
        }
        return table
    }

    static func table(_ sessions: [SessionRecord]) -> TextTable {
        var table = TextTable([
            ("ID", .left), ("CHANNEL", .left), ("CONNECTION", .left), ("STARTED", .left), ("DURATION", .right),
            ("END REASON", .left),
        ])
        for s in sessions {
            table.add([
                s.id, s.channelID, s.connectionID, HumanFormat.localTime(milliseconds: s.startedAt),
                HumanFormat.duration(milliseconds: s.endedAt.flatMap { HumanFormat.span(from: s.startedAt, to: $0) }),
                s.endedAt == nil ? "(not ended)" : s.endReason,
            ])
        }
        return table
    }

    /// What the session did not keep, when it dropped anything (nil: nothing, shown as "-").
    static func refused(_ session: SessionRecord) -> String? {
        var parts: [String] = []
        if let count = session.eventsRefused, count > 0 {
            parts.append("\(count) events over the limit (\(HumanFormat.size(bytes: session.eventsRefusedBytes ?? 0) ?? "0 B"))")
        }
        if let count = session.messagesDropped, count > 0 { parts.append("\(count) messages dropped (arrived faster than handled)") }
        if let count = session.catalogWritesDropped, count > 0 { parts.append("\(count) catalog writes dropped") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}
