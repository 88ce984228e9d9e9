import Archive
import ArgumentParser
import Foundation
import DiskLayout

/// `recbot search TEXT`: a substring across every session's messages, newest first, each with
/// where to play it.
struct SearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find text in data-channel messages and notify/push payloads across sessions.",
        discussion: """
            Any substring matches, Japanese included, case-folded. Queries of three characters or more use the \
            catalog's trigram index; shorter ones scan. Each result names its session, sender and time, and the \
            sender's recording with the offset to play at.
            """
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The text to find.") var text: String
    @Option(help: "Only sessions of this channel.") var channel: String?
    @Option(help: ArgumentHelp("Only this session.", valueName: "id")) var session: ULIDArgument?
    @Option(help: ArgumentHelp("Only messages received at or after this time (RFC 3339, YYYY-MM-DD[ HH:MM[:SS]] local, or an age such as 24h).", valueName: "time"))
    var since: TimeArgument?
    @Option(help: ArgumentHelp("Only messages received before this time.", valueName: "time"))
    var until: TimeArgument?
    @Option(help: ArgumentHelp("Only messages of this kind (repeatable; default datachannel, notify and push).",
                               valueName: "notify|push|datachannel|signaling"))
    var kind: [EventKind] = []
    @Option(help: "At most this many results.") var limit: Int = MessageSearch.defaultLimit

    func validate() throws {
        if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { throw ValidationError("the search text is empty") }
        if text.utf8.count > 1_024 { throw ValidationError("the search text is longer than 1024 bytes") }
        if limit < 1 { throw ValidationError("--limit must be at least 1") }
        if let since, let until, until.milliseconds <= since.milliseconds {
            throw ValidationError("--until must be later than --since")
        }
    }

    func run() throws {
        let search = MessageSearch(text: text, channelID: channel, sessionID: session?.value, since: since?.milliseconds,
                                   until: until?.milliseconds, kinds: kind, limit: limit)
        let results = try common.openCatalogForQuery()?.query { catalog throws(CatalogError) -> [SearchResults.Result] in
            if let caveat = try catalog.searchIndexCaveat() { Console.note("warning: " + caveat) }
            return try SearchResults.find(search, in: catalog)
        } ?? []
        let dataDirectory = common.dataDirectory
        if output.json {
            Console.print(JSONValue.array(results.map { .object(Self.json($0, dataDirectory: dataDirectory)) }).rendered())
            return
        }
        var table = TextTable([
            ("RECEIVED", .left), ("CHANNEL", .left), ("SESSION", .left), ("SENDER", .left), ("KIND", .left), ("PLAY AT", .left),
            ("MESSAGE", .left),
        ])
        for result in results {
            let event = result.match.event
            table.add([
                HumanFormat.localTime(milliseconds: event.receivedAt), result.match.channelID, event.sessionID, event.senderConnectionID,
                event.label.map { "\(event.kind.rawValue) \($0)" } ?? event.eventType.map { "\(event.kind.rawValue) \($0)" } ?? event.kind.rawValue,
                result.placement.map { "\(($0.recording.path as NSString).lastPathComponent) @\(HumanFormat.offset(milliseconds: $0.offsetMilliseconds))" },
                SearchSnippet.around(result.match.searchedText ?? "", match: text),
            ])
        }
        Console.print(table.rendered())
    }

    static func json(_ result: SearchResults.Result, dataDirectory: DataDirectory) -> [(String, JSONValue)] {
        RecordJSON.event(result.match.event) + [
            ("channel_id", .string(result.match.channelID)),
            ("recording", result.placement.map { .object(RecordJSON.recording($0.recording, dataDirectory: dataDirectory)) } ?? .null),
            ("offset_ms", .int(result.placement?.offsetMilliseconds)),
        ]
    }
}
