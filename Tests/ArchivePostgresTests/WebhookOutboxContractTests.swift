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

    func row(_ event: String, session: String?, url: String = "http://receiver/hook", credentials: String? = "") -> WebhookRecord {
        WebhookRecord(eventID: event, sessionID: session, eventType: "archive.available", url: url, body: #"{"id":"\#(event)"}"#,
                      createdAt: 1_000, expiresAt: 1_000 + 86_400_000, credentials: credentials)
    }

    func claim(_ catalog: any CatalogStore, _ owner: String, at now: Int64 = 2_000, credentials: String = "K", perURL: Int = 4,
               limit: Int = 32) throws -> [String] {
        try catalog.claimWebhooks(WebhookClaim(owner: owner, now: now, leaseUntil: now + 30_000, credentials: credentials,
                                               perURL: perURL, limit: limit)).map(\.eventID)
    }

    @Test(arguments: CatalogBackend.allCases) func attemptsDeliveriesFailuresAndRetries(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks([row("E1", session: "A"), row("E2", session: "B"), row("E3", session: "C")])
        let claimed = try catalog.claimWebhooks(WebhookClaim(owner: "X", now: 2_000, leaseUntil: 32_000, credentials: "", perURL: 4, limit: 10))
        #expect(claimed.map(\.eventID) == ["E1", "E2", "E3"])
        var (first, second, third) = (claimed[0], claimed[1], claimed[2])
        first.status = .delivered
        (first.attempts, first.deliveredAt) = (2, 5_000)
        second.attempts = 1
        (second.nextAttemptAt, second.lastError) = (9_000, "HTTP 500")
        third.status = .failed
        third.lastError = "gave up after 24 h: timed out"
        for updated in [first, second, third] { #expect(try catalog.recordWebhookAttempt(updated, owner: "X")) }

        #expect(try catalog.pendingWebhooks(limit: 10).map(\.eventID) == ["E2"])
        #expect(try catalog.pendingWebhooks(limit: 10).first?.lastError == "HTTP 500")
        #expect(try catalog.webhookCounts() == { var c = WebhookCounts(); (c.pending, c.delivered, c.failed) = (1, 1, 1); return c }())
        #expect(try catalog.webhooks(WebhookFilter(status: .failed)).map(\.eventID) == ["E3"])
        #expect(try catalog.webhooks(WebhookFilter()).map(\.eventID) == ["E3", "E2", "E1"], "newest first")
        #expect(try catalog.webhooks(WebhookFilter(ids: [first.id!, third.id!])).map(\.eventID) == ["E3", "E1"])
        #expect(try catalog.webhooks(WebhookFilter(status: .delivered)).first?.deliveredAt == 5_000)
        #expect(try self.claim(catalog, "Y", at: 8_999).isEmpty && self.claim(catalog, "Y", at: 9_000) == ["E2"], "due at its next attempt")
        #expect(try catalog.nextWebhookDue(credentials: "") == 39_000, "leased by Y until 39 s")

        #expect(try catalog.retryFailedWebhooks(ids: [999], now: 20_000, expiresAt: 30_000) == 0)
        #expect(try catalog.retryFailedWebhooks(ids: nil, now: 20_000, expiresAt: 30_000) == 1)
        let retried = try #require(try catalog.pendingWebhooks(limit: 10).first { $0.eventID == "E3" })
        #expect(retried.attempts == 0 && retried.nextAttemptAt == 20_000 && retried.expiresAt == 30_000)
        #expect(try catalog.pruneDeliveredWebhooks(before: 5_000) == 0 && catalog.pruneDeliveredWebhooks(before: 5_001) == 1)
        #expect(try catalog.webhookCounts().delivered == 0)
    }

    /// Issue 39 item 4: only each recording's oldest pending row may go, one process at a time;
    /// an attempt is stored only by the lease's owner; a lease that ran out (its owner killed)
    /// lets another process take the row again.
    @Test(arguments: CatalogBackend.allCases) func claimsKeepEachRecordingsOrderAndOneSender(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks([row("A1", session: "A"), row("A2", session: "A"), row("B1", session: "B", url: "http://other/hook"),
                                     row("N1", session: nil), row("N2", session: nil)])
        #expect(try claim(catalog, "X") == ["A1", "B1", "N1"])
        #expect(try claim(catalog, "Y").isEmpty, "every head is X's; the rows behind them wait")
        let a1 = try #require(try catalog.pendingWebhooks(limit: 10).first { $0.eventID == "A1" })
        var delivered = a1
        (delivered.status, delivered.deliveredAt, delivered.attempts) = (.delivered, 3_000, 1)
        #expect(try !catalog.recordWebhookAttempt(delivered, owner: "Y"), "not Y's lease: nothing written")
        #expect(try catalog.recordWebhookAttempt(delivered, owner: "X"))
        #expect(try claim(catalog, "Y") == ["A2"])
        // X is killed holding B1 and N1: past the lease, Y takes them (and A2 again, its own
        // lease over too); X's late write is refused.
        #expect(try claim(catalog, "Y", at: 32_001) == ["A2", "B1", "N1"])
        let b1 = try #require(try catalog.pendingWebhooks(limit: 10).first { $0.eventID == "B1" })
        #expect(try !catalog.recordWebhookAttempt(b1, owner: "X"))
        // An owner known dead (a recorder killed on this host) gives its leases back at once.
        #expect(try catalog.webhookLeaseOwners(now: 32_002) == ["Y"])
        #expect(try catalog.releaseWebhookLeases(owner: "Y") == 3 && catalog.webhookLeaseOwners(now: 32_002).isEmpty)
        #expect(try claim(catalog, "Z", at: 32_002) == ["A2", "B1", "N1"])
    }

    /// Issue 39 item 4: 600 rows for a receiver that is down cannot keep a due row for another
    /// waiting, and a URL holds at most `perURL` leases across claims.
    @Test(arguments: CatalogBackend.allCases) func oneReceiversBacklogStarvesNoOther(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks((0..<600).map { row("D\($0)", session: "S\($0)", url: "http://dead/hook") })
        try catalog.enqueueWebhooks([row("LIVE", session: "L", url: "http://live/hook")])
        let first = try claim(catalog, "X")
        #expect(first.contains("LIVE") && first.filter { $0.hasPrefix("D") }.count == 4, "\(first)")
        #expect(try claim(catalog, "Y").isEmpty, "the dead URL's four leases are taken")
    }

    /// Issue 39 item 4: a row is sent only with its own credentials: '' (none) and rows from
    /// before references were kept go with anyone's; another set's rows stay queued.
    @Test(arguments: CatalogBackend.allCases) func rowsGoOnlyWithTheirOwnCredentials(backend: CatalogBackend) throws {
        let catalog = try backend.makeCatalog()
        try catalog.enqueueWebhooks([row("MINE", session: "1", credentials: "K"), row("NONE", session: "2", credentials: ""),
                                     row("OLD", session: "3", credentials: nil), row("THEIRS", session: "4", credentials: "OTHER")])
        #expect(try claim(catalog, "X", credentials: "K") == ["MINE", "NONE", "OLD"])
        #expect(try catalog.pendingWebhooks(limit: 10).first { $0.eventID == "THEIRS" }?.credentials == "OTHER")
        #expect(try catalog.nextWebhookDue(credentials: "K") == 32_000 && catalog.nextWebhookDue(credentials: "OTHER") == 1_000)
    }
}
