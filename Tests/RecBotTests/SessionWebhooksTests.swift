import Archive
import Foundation
import Logging
import SystemClock
import Testing
import TestSupport
import Webhooks
@testable import RecBot

/// A join's last seconds of delivery, against real receivers (Tests/Peers/webhook_receiver.py).
@Suite(.serialized) struct SessionWebhooksTests {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-session-webhooks-\(UUID())")
    let clock = SystemTimeSource()
    let logger = Logger(label: "test")

    init() throws { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }

    func rows(_ count: Int, to url: String, prefix: String) -> [WebhookRecord] {
        let now = clock.wallClockMilliseconds()
        return (0..<count).flatMap { index in
            WebhookEvent(uploaded: "archive.uploaded", sessionID: "\(prefix)-S\(index)", fields: ["n": index], timestampMilliseconds: now,
                         id: "\(prefix)-\(index)")
                .rows(settings: WebhookSettings(urls: [url]), now: now)
        }
    }

    /// A hung receiver's requests still under way when the join finishes do not take the final
    /// drain's time: a row for a live receiver queued at the end is delivered within the finish
    /// (when the finish first waited for those requests, the drain began with no time left).
    @Test func aHungReceiversRequestsDoNotHoldBackTheFinalDrain() async throws {
        // On an executor of its own: the suite's shared pool, busy with hundreds of tests, once
        // held this test's tasks back by seconds.
        try await withTaskExecutorPreference(DedicatedExecutor.shared) { try await hungReceiverBody() }
    }

    func hungReceiverBody() async throws {
        let hung = try WebhookReceiver(directory: directory, arguments: ["--delay", "3600"], waitUntilListening: true)
        let live = try WebhookReceiver(directory: directory, arguments: [], waitUntilListening: true)
        defer { hung.stop(); live.stop() }
        let catalog = try Catalog(path: directory.appendingPathComponent("catalog.sqlite").path)
        let writer = CatalogWriter(catalog: catalog, clock: clock, logger: logger)
        let webhooks = SessionWebhooks(settings: WebhookSettings(urls: []), host: "test", version: "0", writer: writer, catalog: catalog,
                                       clock: clock, logger: logger, executor: DedicatedExecutor.shared)
        try catalog.enqueueWebhooks(rows(8, to: hung.url, prefix: "hung"))
        webhooks.start()
        let start = Date()
        while try catalog.webhookLeaseOwners(now: clock.wallClockMilliseconds()).isEmpty, Date().timeIntervalSince(start) < 10 {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(try !catalog.webhookLeaseOwners(now: clock.wallClockMilliseconds()).isEmpty, "the hung receiver holds requests")
        try catalog.enqueueWebhooks(rows(1, to: live.url, prefix: "live"))
        let finishing = Date()
        await webhooks.finish(seconds: 3)
        let took = Date().timeIntervalSince(finishing)
        // The receiver writes its log line after it answers: a moment to see it.
        while try live.delivered().isEmpty, Date().timeIntervalSince(finishing) < took + 2 { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(try live.delivered().count == 1, "the live receiver's row went within the finish (\(took) s)")
        // The bug this test is for shows in the delivery above; the time only catches a finish
        // that waits for the hung requests (CI's loaded suite took 10.0 s once with the fix).
        #expect(took < 20, "the finish kept its 3 s, give or take a loaded machine: \(took) s")
        #expect(try hung.requests().isEmpty)
    }
}
