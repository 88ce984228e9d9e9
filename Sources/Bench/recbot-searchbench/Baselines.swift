import Archive
import Foundation
import GRDB

struct BaselineTime {
    var time: Duration
    /// The indexed query's own time, when the baseline measured it the same way (server-side).
    var indexed: Duration?
}

/// The same match by a scan of every row's text: what the search costs without its index.
struct SQLiteBaseline {
    let path: String

    func scan(_ search: MessageSearch) throws -> BaselineTime {
        let queue = try DatabaseQueue(path: path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        var arguments: StatementArguments = [search.likePattern]
        var channel = ""
        if let id = search.channelID { channel = " AND s.channel_id = ?"; _ = arguments.append(contentsOf: [id]) }
        let sql = """
            SELECT e.* FROM events e JOIN sessions s ON s.id = e.session_id
            WHERE coalesce(e.search_text, e.payload_text) LIKE ? ESCAPE '\\' AND e.kind IN ('datachannel', 'notify', 'push')\(channel)
            ORDER BY e.received_at DESC, e.id DESC LIMIT 50
            """
        var times: [Duration] = []
        for _ in 0..<3 { times.append(try ContinuousClock().measure { _ = try queue.read { db in try Row.fetchAll(db, sql: sql, arguments: arguments) } }) }
        return BaselineTime(time: times.sorted()[1])
    }
}

/// PostgreSQL: the server's own execution time (EXPLAIN ANALYZE) for recbot's query as the
/// planner runs it, and with index scans turned off; both through psql, so the ratio is the
/// server's work alone.
struct PostgresBaseline {
    let psql: String
    let url: String

    func scan(_ search: MessageSearch) throws -> BaselineTime {
        let literal = "'" + search.likePattern.replacingOccurrences(of: "'", with: "''") + "'"
        let channel = search.channelID.map { " AND s.channel_id = '\($0)'" } ?? ""
        let query = """
            EXPLAIN (ANALYZE, FORMAT JSON) SELECT e.* FROM events e JOIN sessions s ON s.id = e.session_id
            WHERE coalesce(e.search_text, e.payload_text) ILIKE \(literal) AND e.kind = ANY(ARRAY['datachannel', 'notify', 'push'])\(channel)
            ORDER BY e.received_at DESC, e.id DESC LIMIT 50
            """
        let indexed = try median { try executionTime(query) }
        let scanned = try median { try executionTime("SET enable_bitmapscan = off; SET enable_indexscan = off; " + query) }
        return BaselineTime(time: scanned, indexed: indexed)
    }

    private func median(_ body: () throws -> Duration) throws -> Duration {
        var times: [Duration] = []
        for _ in 0..<3 { times.append(try body()) }
        return times.sorted()[1]
    }

    private func executionTime(_ sql: String) throws -> Duration {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let plans = try JSONSerialization.jsonObject(with: data) as? [[String: Any]],
              let milliseconds = plans.first?["Execution Time"] as? Double else {
            throw BenchError.psqlFailed(String(decoding: data, as: UTF8.self))
        }
        return .microseconds(Int64(milliseconds * 1_000))
    }
}

enum BenchError: Error { case psqlFailed(String) }
