import Archive
import Foundation
import PostgresTestSupport
import Testing

/// The webhook outbox, held to one contract by both catalogs.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct WebhookOutboxContractTests {
    func row(_ event: String, url: String = "http://receiver/hook", at time: Int64 = 1_000) -> WebhookRecord {
        WebhookRecord(eventID: event, sessionID: "S", eventType: "archive.available", url: url, body: #"{"id":"\#(event)"}"#,
                      createdAt: time, expiresAt: time + 86_400_000)
    }

    @Test(arguments: CatalogBackend.allCases) func aReplayedEnqueueAddsNothingAndOrderIsKept(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks([row("E1"), row("E2"), row("E1", url: "http://other/hook")])
        try catalog.apply(.webhooks([row("E1"), row("E2")]), replay: true)
        let pending = try catalog.pendingWebhooks(limit: 10)
        #expect(pending.map(\.eventID) == ["E1", "E2", "E1"] && pending.map(\.url) == ["http://receiver/hook", "http://receiver/hook", "http://other/hook"])
        #expect(pending.allSatisfy { $0.status == .pending && $0.attempts == 0 && $0.nextAttemptAt == 1_000 })
        #expect(try catalog.pendingWebhooks(limit: 1).map(\.eventID) == ["E1"])
    }

    @Test(arguments: CatalogBackend.allCases) func attemptsDeliveriesFailuresAndRetries(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks([row("E1"), row("E2"), row("E3")])
        var (first, second, third) = try { () throws -> (WebhookRecord, WebhookRecord, WebhookRecord) in
            let rows = try catalog.pendingWebhooks(limit: 3)
            return (rows[0], rows[1], rows[2])
        }()
        first.status = .delivered
        (first.attempts, first.deliveredAt) = (2, 5_000)
        second.attempts = 1
        (second.nextAttemptAt, second.lastError) = (9_000, "HTTP 500")
        third.status = .failed
        third.lastError = "gave up after 24 h: timed out"
        for updated in [first, second, third] { try catalog.updateWebhook(updated) }

        #expect(try catalog.pendingWebhooks(limit: 10).map(\.eventID) == ["E2"])
        #expect(try catalog.pendingWebhooks(limit: 10).first?.lastError == "HTTP 500")
        #expect(try catalog.webhookCounts() == { var c = WebhookCounts(); (c.pending, c.delivered, c.failed) = (1, 1, 1); return c }())
        #expect(try catalog.webhooks(WebhookFilter(status: .failed)).map(\.eventID) == ["E3"])
        #expect(try catalog.webhooks(WebhookFilter()).map(\.eventID) == ["E3", "E2", "E1"], "newest first")
        #expect(try catalog.webhooks(WebhookFilter(status: .delivered)).first?.deliveredAt == 5_000)

        #expect(try catalog.retryFailedWebhooks(ids: [999], now: 20_000, expiresAt: 30_000) == 0)
        #expect(try catalog.retryFailedWebhooks(ids: nil, now: 20_000, expiresAt: 30_000) == 1)
        let retried = try #require(try catalog.pendingWebhooks(limit: 10).first { $0.eventID == "E3" })
        #expect(retried.attempts == 0 && retried.nextAttemptAt == 20_000 && retried.expiresAt == 30_000)
    }
}
