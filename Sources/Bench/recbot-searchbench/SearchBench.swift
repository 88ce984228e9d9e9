import Archive
import ArchivePostgres
import ArgumentParser
import Foundation
import GRDB

/// `recbot search` on a big archive (issue 44's target: a substring among 1,000,000 messages
/// in ≤ 100 ms). Fills a catalog with chat-like messages in Japanese and English, then times
/// recbot's own query for several kinds of text, beside a baseline in the same run: the same
/// match found by a plain scan (SQLite: LIKE over every row; PostgreSQL: the planner kept off
/// the trigram index), so the index's gain is a ratio, not a number from one machine.
@main
struct SearchBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "recbot-searchbench", abstract: "Time message search on a large catalog.")

    @Option(help: "Messages to store.") var messages = 1_000_000
    @Option(help: "Messages per session.") var perSession = 1_000
    @Option(help: "A PostgreSQL catalog URL (an empty database); without it, a SQLite file in a temporary directory.")
    var postgres: String?
    @Option(help: "psql, for the PostgreSQL baseline (server-side times with and without the index).") var psql = "psql"
    @Option(help: "Runs of each query (the median is reported).") var runs = 7
    @Flag(help: "Also time the web archive's pages (session list, a session) on this catalog.") var pages = false
    @Option(help: "Keep the SQLite catalog here (a directory) instead of a temporary one, and reuse it when it is there.")
    var directory: String?

    func run() throws {
        let directory = self.directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("recbot-searchbench-\(UUID())").path
        let reuse = self.directory != nil && postgres == nil && FileManager.default.fileExists(atPath: directory + "/catalog.sqlite")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if self.directory == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let catalog: any CatalogStore
        if let postgres {
            guard case .postgres(let url) = try CatalogLocation.parse(postgres) else { throw ValidationError("--postgres is not a PostgreSQL URL") }
            catalog = try PostgresCatalog(url: url)
        } else {
            catalog = try Catalog(path: directory + "/catalog.sqlite")
        }
        let fill = reuse ? .zero : try ContinuousClock().measure { try MessageCorpus(messages: messages, perSession: perSession).store(in: catalog) }
        print("stored \(messages) messages in \(messages / perSession) sessions in \(fill) (\(catalog.location))")
        print("query                  matches  recbot search (median / max)   baseline scan   scan ÷ search")
        for query in MessageCorpus.queries {
            let search = MessageSearch(text: query.text, channelID: query.channel)
            var times: [Duration] = []
            var count = 0
            for _ in 0..<runs {
                times.append(try ContinuousClock().measure { count = try catalog.searchMessages(search).count })
            }
            times.sort()
            let baseline = try postgres.map { try PostgresBaseline(psql: psql, url: $0).scan(search) }
                ?? SQLiteBaseline(path: directory + "/catalog.sqlite").scan(search)
            let median = times[times.count / 2]
            print(query.label.padding(toLength: 22, withPad: " ", startingAt: 0), String(format: "%7d", count),
                  "  \(Self.ms(median)) / \(Self.ms(times.last!))".padding(toLength: 31, withPad: " ", startingAt: 0),
                  Self.ms(baseline.time).padding(toLength: 15, withPad: " ", startingAt: 0),
                  String(format: "%.1f×", baseline.time / (baseline.indexed ?? median)))
        }
        if pages { try PageBench.run(catalog, directory: directory, runs: runs) }
    }

    static func ms(_ duration: Duration) -> String { String(format: "%.1f ms", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1e3) }
}
