import Archive
import ArgumentParser

extension EventKind: ExpressibleByArgument {}

struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "List notify, push and data-channel messages a session received.",
        subcommands: [List.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a session's events in arrival order.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Option(help: ArgumentHelp("The session id.", valueName: "id")) var session: ULIDArgument
        @Option(help: ArgumentHelp("Only events of this kind.", valueName: "notify|push|datachannel|signaling"))
        var kind: EventKind?
        @Option(help: ArgumentHelp("Only events of this type (e.g. connection.created).", valueName: "type"))
        var type: String?
        @Option(help: ArgumentHelp("Only data-channel messages with this label (e.g. #chat).", valueName: "label"))
        var label: String?
        @Option(help: "At most this many events.") var limit: Int?

        func validate() throws {
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        }

        func run() throws {
            let filter = EventFilter(sessionID: session.value, kind: kind, eventType: type, label: label, limit: limit)
            let events = try common.openCatalogForQuery()?.query { catalog throws(CatalogError) in try catalog.events(filter) } ?? []
            if output.json {
                Console.print(JSONValue.array(events.map { .object(RecordJSON.event($0)) }).rendered())
                return
            }
            var table = TextTable([
                ("ID", .right), ("RECEIVED", .left), ("KIND", .left), ("TYPE", .left), ("LABEL", .left), ("SENDER", .left),
                ("PAYLOAD", .left),
            ])
            for e in events {
                table.add([
                    e.id.map(String.init), HumanFormat.localTime(milliseconds: e.receivedAt), e.kind.rawValue, e.eventType,
                    e.label, e.senderConnectionID, RecordJSON.preview(e.payload),
                ])
            }
            Console.print(table.rendered())
        }
    }
}
