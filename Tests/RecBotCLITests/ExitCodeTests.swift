import Foundation
import Outcomes
import Testing
import TestSupport

/// One exit decision (issue 29): "not found" is one code in every command, and the tables that
/// document the codes list exactly the codes `ExitStatus` has.
@Suite struct ExitCodeTests {
    let fixture: Fixture

    init() throws { fixture = try Fixture() }

    @Test func notFoundIsOneCodeInEveryCommand() throws {
        let absentSession = "01JD2K0000DDDDDDDDDDDDDDDD"
        let asks: [[String]] = [
            ["sessions", "show", absentSession],
            ["recordings", "show", "999"],
            ["verify", "999"],
            ["verify", absentSession],
            ["repair", absentSession],
            ["upload", absentSession, "--to", "s3://bucket"],
        ]
        for arguments in asks {
            let result = try fixture.run(arguments, environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
            #expect(result.status == ExitStatus.notFound.rawValue, "\(arguments) exited \(result.status): \(result.stderr)")
        }
    }

    @Test func aShowWithNoCatalogYetIsNotFound() throws {
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-exit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = try RecBotBinary.run(["sessions", "show", "01JD2K0000DDDDDDDDDDDDDDDD", "--data-dir", empty])
        #expect(result.status == ExitStatus.notFound.rawValue, "\(result.status): \(result.stderr)")
        #expect(try RecBotBinary.run(["sessions", "list", "--data-dir", empty]).status == 0, "an empty list is not an error")
    }

    @Test func theDocumentedTablesListExactlyTheCodes() throws {
        let root = repositoryRoot
        let codes = Set(ExitStatus.allCases.map(\.rawValue))
        for document in ["README.md", "docs/usage.md"] {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            let documented = Self.exitCodeTable(in: text)
            #expect(Set(documented) == codes, "\(document) documents \(documented.sorted()), ExitStatus has \(codes.sorted())")
            #expect(documented.count == Set(documented).count, "\(document) lists a code twice")
        }
    }

    /// The codes in the first column of the table under the "## Exit codes" heading
    /// (a cell may hold several: "65, 66").
    static func exitCodeTable(in markdown: String) -> [Int32] {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let heading = lines.firstIndex(of: "## Exit codes") else { return [] }
        var codes: [Int32] = []
        for line in lines[(heading + 1)...] {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("| "), let cell = line.split(separator: "|").first else { continue }
            codes += cell.split(separator: ",").compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
        }
        return codes
    }
}

/// A server that accepts the connection and closes it before any answer (a load balancer whose
/// backend is down): websocket-kit waited for the upgrade forever, and so did `recbot join`,
/// through its signaling deadline. Now the join fails as an unreachable server does.
@Suite struct ClosedBeforeUpgradeTests {
    @Test func aServerThatClosesBeforeTheUpgradeIsUnreachable() throws {
        let closer = try TCPRelay(targetPort: 9)
        defer { closer.close() }
        closer.refuse()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-closer-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let started = Date()
        let result = try RecBotBinary.run(["join", "--channel", "x", "--url", "ws://127.0.0.1:\(closer.port)/signaling", "--data-dir", directory])
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 69 && result.stderr.contains("no WebSocket upgrade"), "\(result.status): \(result.stderr)")
        #expect(elapsed < 60, "it took \(elapsed) s")
    }
}
