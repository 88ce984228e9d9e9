import Archive
import Foundation
import Testing
import TestSupport

/// Webhooks against a real HTTP receiver (Tests/Peers/webhook_receiver.py) that is down at
/// first, then slow and failing: every event still arrives, signed, in order per recording.
@Suite(.serialized) struct WebhookScenarioTests {
    typealias Receiver = WebhookReceiver

    @Test func everyEventArrivesSignedAndInOrderDespiteADownSlowFailingReceiver() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let receiver = try Receiver(directory: scenario.directory, arguments: ["--down-for", "2", "--delay", "0.3", "--fail-first", "2", "--secret", "s3cret"])
            defer { receiver.stop() }
            let result = try scenario.join(["--duration", "5s", "--split-duration", "2", "--webhook-url", receiver.url],
                                           environment: ["RECBOT_WEBHOOK_SECRET": "s3cret"])
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(20_000))")
            // Whatever the join's last seconds did not deliver is sent by `webhooks retry`.
            let retry = try scenario.recbot(["webhooks", "retry", "--seconds", "30", "--data-dir", scenario.dataDirectory],
                                            environment: ["RECBOT_WEBHOOK_SECRET": "s3cret"])
            #expect(retry.status == 0, "\(retry.stdout)\(retry.stderr)")

            let delivered = try receiver.delivered()
            let types = delivered.map { $0.body["type"] as? String ?? "-" }
            #expect(delivered.allSatisfy { $0.entry["signature_valid"] as? Bool == true }, "every body signed with the secret")
            #expect(delivered.allSatisfy { ($0.entry["headers"] as? [String: String])?["sora-event-webhook-type"] == $0.body["type"] as? String })
            #expect(Set(delivered.compactMap { $0.body["id"] as? String }).count == delivered.count, "each event once")
            #expect(types.first == "recording.started" && types.last == "recording.report", "\(types)")
            for type in ["archive.started", "archive.available", "split-archive.available", "split-archive.end"] {
                #expect(types.contains(type), "\(type) in \(types)")
            }
            // A file's started comes before its available.
            for (index, event) in delivered.enumerated() where event.body["type"] as? String == "archive.available" {
                let filename = (event.body["data"] as? [String: Any])?["filename"] as? String
                let started = delivered.firstIndex { ($0.body["type"] as? String) == "archive.started" && (($0.body["data"] as? [String: Any])?["filename"] as? String) == filename }
                #expect(started.map { $0 < index } == true, "\(filename ?? "-")")
            }
            let report = try #require(delivered.last?.body)
            #expect((report["data"] as? [String: Any])?["split_duration"] as? Int == 2 && report["recording_id"] as? String != nil)

            let list = try scenario.recbot(["webhooks", "list", "--json", "--data-dir", scenario.dataDirectory])
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
            #expect(rows.count == delivered.count && rows.allSatisfy { $0["status"] as? String == "delivered" })
        }
    }

    /// recbot killed while the receiver is down: the events it had queued are in the catalog,
    /// and `recbot repair` sends them once the receiver is back, then the end events of the
    /// files and report it finished (marked repaired).
    @Test func aKillLosesNoEventRepairSendsWhatWasQueued() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let receiver = try Receiver(directory: scenario.directory, arguments: ["--down-for", "5"])
            defer { receiver.stop() }
            let join = try scenario.startJoin(["--duration", "30s", "--webhook-url", receiver.url])
            var started = false
            for _ in 0..<100 where !started {
                Thread.sleep(forTimeInterval: 0.1)
                started = ((try? Catalog.openExisting(path: scenario.dataDirectory + "/catalog.sqlite")?.recordings()) ?? []).count == 1
            }
            Thread.sleep(forTimeInterval: 2)
            kill(join.processIdentifier, SIGKILL)
            join.waitUntilExit()
            #expect(try receiver.delivered().isEmpty, "the receiver was down the whole time")
            let queued = try scenario.catalog().webhooks(WebhookFilter(status: .pending))
            #expect(Set(queued.map(\.eventType)) == ["recording.started", "archive.started"], "\(queued.map(\.eventType))")

            let repair = try scenario.recbot(["repair", "--all", "--data-dir", scenario.dataDirectory, "--webhook-seconds", "20"])
            #expect(repair.status == 0, "\(repair.stderr)")
            let delivered = try receiver.delivered().compactMap { $0.body["type"] as? String }
            #expect(delivered == ["recording.started", "archive.started", "archive.available", "recording.report"], "\(delivered)")
            let last = try #require(try receiver.delivered().last?.body)
            #expect((last["recbot"] as? [String: Any])?["repaired"] as? Bool == true && (last["data"] as? [String: Any])?["archives"] is [Any])
        }
    }
}
