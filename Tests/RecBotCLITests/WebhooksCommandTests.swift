import Archive
import Foundation
import Testing
import TestSupport

/// `recbot webhooks retry ID` is judged by the rows it names: another recording's rows for a
/// receiver that is down do not make it fail (issue 39 item 4).
@Suite struct WebhooksCommandTests {
    @Test func retryingOneRowIsJudgedByThatRowAlone() throws {
        let fixture = try Fixture()
        let receiver = try WebhookReceiver(directory: URL(fileURLWithPath: fixture.directory), arguments: [], waitUntilListening: true)
        defer { receiver.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func row(_ id: String, session: String, url: String) -> WebhookRecord {
            WebhookRecord(eventID: id, sessionID: session, eventType: "archive.available", url: url, body: #"{"id":"\#(id)"}"#,
                          createdAt: now, expiresAt: now + 86_400_000)
        }
        // Unrelated: a row for a port nothing listens on, queued by another recording.
        try fixture.catalog.enqueueWebhooks([row("WANTED", session: Fixture.s1, url: receiver.url),
                                             row("OTHER", session: Fixture.s3, url: "http://127.0.0.1:\(try freeLoopbackPort())/hook")])
        let wanted = try #require(try fixture.catalog.webhooks(WebhookFilter()).first { $0.eventID == "WANTED" }?.id)
        let claimed = try fixture.catalog.claimWebhooks(WebhookClaim(owner: "t", now: now, leaseUntil: now + 1_000, credentials: "", perURL: 4, limit: 1))
        var failed = try #require(claimed.first { $0.id == wanted })
        (failed.status, failed.attempts, failed.lastError) = (.failed, 9, "HTTP 500")
        #expect(try fixture.catalog.recordWebhookAttempt(failed, owner: "t"))

        let result = try fixture.run(["webhooks", "retry", String(wanted), "--seconds", "3"])
        #expect(result.status == 0, "\(result.status): \(result.stdout) \(result.stderr)")
        #expect(try receiver.delivered().compactMap { $0.body["id"] as? String } == ["WANTED"])
        let all = try fixture.run(["webhooks", "retry", "--seconds", "1"])
        #expect(all.status == 69, "without ids every row counts: \(all.status)")
    }
}
