import Archive
import Logging
import WireCoding

/// Delivers the outbox: rows of one recording and URL in order (a row waits while an earlier
/// one is pending), each failure retried after `RetrySchedule`'s delay until the row's window
/// ends (then `failed`). Runs beside the recording and never inside it: the recording only
/// writes rows.
public final class WebhookDispatcher: Sendable {
    public struct Report: Sendable, Equatable {
        public var delivered = 0
        public var failedAttempts = 0
        public var givenUp = 0
        public init() {}
    }

    private let sender: WebhookSender
    private let clock: any TimeSource
    private let logger: Logger
    private let jitter: @Sendable () -> Double

    public init(settings: WebhookSettings, clock: any TimeSource, logger: Logger,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.sender = WebhookSender(settings: settings)
        (self.clock, self.logger, self.jitter) = (clock, logger, jitter)
    }

    public func shutdown() async { await sender.shutdown() }

    /// One pass over the pending rows: every row that is due and not behind an undelivered
    /// one of its recording and URL is attempted once.
    public func deliverDue(_ catalog: any CatalogStore, limit: Int = 500) async -> Report {
        var report = Report()
        guard let pending = try? catalog.pendingWebhooks(limit: limit) else { return report }
        var blocked: Set<String> = []
        for var row in pending {
            let key = row.url + "\u{0}" + (row.sessionID ?? "")
            guard !blocked.contains(key) else { continue }
            let now = clock.wallClockMilliseconds()
            guard row.nextAttemptAt <= now else {
                blocked.insert(key)
                continue
            }
            let failure = await sender.send(type: row.eventType, body: row.body, to: row.url)
            let after = clock.wallClockMilliseconds()
            row.attempts += 1
            if let failure {
                row.lastError = failure
                if after >= row.expiresAt {
                    row.status = .failed
                    report.givenUp += 1
                    logger.warning("webhook given up after its retry window", metadata: ["type": "\(row.eventType)", "url": "\(row.url)", "error": "\(failure)"])
                } else {
                    row.nextAttemptAt = after + RetrySchedule.delayMilliseconds(afterAttempt: row.attempts, unit: jitter())
                    report.failedAttempts += 1
                    logger.info("webhook not delivered; will retry", metadata: ["type": "\(row.eventType)", "url": "\(row.url)", "error": "\(failure)",
                                                                               "attempt": "\(row.attempts)"])
                }
                blocked.insert(key)
            } else {
                row.status = .delivered
                row.deliveredAt = after
                report.delivered += 1
            }
            do {
                try catalog.updateWebhook(row)
            } catch {
                logger.warning("cannot record a webhook attempt in the catalog", metadata: ["error": "\(error)"])
                return report
            }
        }
        return report
    }

    /// Passes until nothing is pending and due, or `deadline` (monotonic) passes; a pass that
    /// sends nothing waits a little before the next.
    public func drain(_ catalog: any CatalogStore, until deadline: MonotonicTime) async -> Report {
        var total = Report()
        while clock.now() < deadline, !Task.isCancelled {
            let report = await deliverDue(catalog)
            total.delivered += report.delivered
            total.failedAttempts += report.failedAttempts
            total.givenUp += report.givenUp
            let pending = (try? catalog.webhookCounts().pending) ?? 0
            guard pending > 0 else { break }
            if report.delivered == 0 { try? await Task.sleep(nanoseconds: 200_000_000) }
        }
        return total
    }
}

extension WebhookSender {
    /// Sends what is queued (any session's) for at most `seconds`, then lets go of its connections.
    public static func drainQueued(_ catalog: any CatalogStore, settings: WebhookSettings, seconds: Double, clock: any TimeSource,
                                   logger: Logger = Logger(label: "recbot.webhooks")) async -> WebhookDispatcher.Report {
        let dispatcher = WebhookDispatcher(settings: settings, clock: clock, logger: logger)
        let report = await dispatcher.drain(catalog, until: clock.now().adding(milliseconds: Int64(seconds * 1000)))
        await dispatcher.shutdown()
        return report
    }
}
