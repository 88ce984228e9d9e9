import Archive
import ArchiveWeb
import DiskLayout
import Foundation

/// The web archive's pages on the same catalog (issue 44's target: the first page of 10,000
/// sessions in ≤ 200 ms of server time): what the handler does — the catalog read and the
/// rendering — timed in process, beside a baseline in the same run: every session rendered on
/// one page, as a list without paging would.
enum PageBench {
    static func run(_ catalog: any CatalogStore, directory: String, runs: Int) throws {
        let dataDirectory = DataDirectory(path: directory)
        let sessions = try catalog.sessions(SessionFilter())
        guard let newest = sessions.first else { return }
        let first = try median(runs) { _ = try SessionListPage.load(from: catalog, filter: .init()).rendered() }
        let channel = try median(runs) { _ = try SessionListPage.load(from: catalog, filter: .init(channelID: newest.channelID)).rendered() }
        let older = try median(runs) { _ = try SessionListPage.load(from: catalog, filter: .init(until: sessions[sessions.count / 2].startedAt)).rendered() }
        let session = try median(runs) {
            _ = try SessionPage.load(from: catalog, id: newest.id, dataDirectory: dataDirectory, now: newest.startedAt)?.rendered()
        }
        let everything = try median(runs) {
            _ = SessionListPage(sessions: try catalog.sessions(SessionFilter()), filter: .init(), hasOlder: false).rendered()
        }
        print("\npage (\(sessions.count) sessions)        server time (median)   all sessions on one page   ratio")
        for (label, time) in [("first page", first), ("first page, 1 channel", channel), ("a middle page", older), ("a session's page", session)] {
            print(label.padding(toLength: 32, withPad: " ", startingAt: 0), SearchBench.ms(time).padding(toLength: 22, withPad: " ", startingAt: 0),
                  SearchBench.ms(everything).padding(toLength: 26, withPad: " ", startingAt: 0), String(format: "%.1f×", everything / time))
        }
    }

    static func median(_ runs: Int, _ body: () throws -> Void) throws -> Duration {
        var times: [Duration] = []
        for _ in 0..<max(1, runs) { times.append(try ContinuousClock().measure { try body() }) }
        return times.sorted()[times.count / 2]
    }
}
