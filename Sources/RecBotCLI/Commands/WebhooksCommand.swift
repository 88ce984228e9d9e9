import Archive
import ArgumentParser
import Foundation
import Logging
import SystemClock
import Webhooks
import WireCoding

struct WebhooksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "List the webhook outbox, and send what is queued or failed.",
        subcommands: [List.self, Retry.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List webhooks, newest first.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Flag(help: "Only those not delivered yet.") var pending = false
        @Flag(help: "Only those given up on (retry them with `recbot webhooks retry`).") var failed = false
        @Option(help: ArgumentHelp("Only this session's.", valueName: "id")) var session: ULIDArgument?
        @Option(help: "At most this many.") var limit: Int = 100

        func validate() throws {
            if pending && failed { throw ValidationError("--pending and --failed exclude each other") }
            if limit < 1 { throw ValidationError("--limit must be at least 1") }
        }

        func run() throws {
            let status: WebhookStatus? = pending ? .pending : failed ? .failed : nil
            let filter = WebhookFilter(status: status, sessionID: session?.value, limit: limit)
            let rows = try common.openCatalogForQuery()?.query { c throws(CatalogError) in try c.webhooks(filter) } ?? []
            if output.json {
                Console.print(JSONValue.array(rows.map { .object(RecordJSON.webhook($0)) }).rendered())
                return
            }
            var table = TextTable([("ID", .right), ("CREATED", .left), ("TYPE", .left), ("SESSION", .left), ("STATUS", .left),
                                   ("ATTEMPTS", .right), ("URL", .left), ("LAST ERROR", .left)])
            for row in rows {
                table.add([row.id.map(String.init), HumanFormat.localTime(milliseconds: row.createdAt), row.eventType, row.sessionID,
                           row.status.rawValue, String(row.attempts), row.url, row.lastError])
            }
            Console.print(table.rendered())
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Queue failed webhooks again (all, or these ids) and send everything due now.",
            discussion: "Sends for at most --seconds; what is left stays queued for the next join, repair or retry.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var webhookArguments: WebhookArguments
        @Argument(help: ArgumentHelp("Ids of failed webhooks (from `webhooks list --failed`); none: every failed one.", valueName: "id"))
        var ids: [Int64] = []
        @Option(help: "How long to keep sending, in seconds (at most a day).") var seconds: Int = 30

        func validate() throws {
            guard WebhookArguments.sendingSecondsRange.contains(seconds) else {
                throw ValidationError("--seconds must be between 0 and \(WebhookArguments.sendingSecondsRange.upperBound)")
            }
        }

        func run() async throws {
            let settings = try common.settings()
            let delivery: WebhookSettings
            do { delivery = try webhookArguments.deliverySettings(settings) } catch { throw Console.fail(error, cause: .invalidConfiguration) }
            guard let catalog = try common.openCatalogForWriting() else { throw CommandEnd(cause: .notFound) }
            let clock = SystemTimeSource()
            let now = clock.wallClockMilliseconds()
            let requeued = try catalog.query { c throws(CatalogError) in
                try c.retryFailedWebhooks(ids: ids.isEmpty ? nil : ids, now: now, expiresAt: now + delivery.retryWindowMilliseconds)
            }
            let report = await WebhookSender.drainQueued(catalog, settings: delivery, seconds: Double(seconds), clock: SystemTimeSource())
            let left = (try? catalog.webhookCounts()) ?? WebhookCounts()
            Console.print("requeued \(requeued) failed; delivered \(report.delivered); pending \(left.pending), failed \(left.failed)")
            // 69: what was asked for did not all get through. Named ids are judged by
            // themselves: another recording's undeliverable rows are not this command's failure.
            if try undelivered(ids, in: catalog, counts: left) > 0 { throw CommandEnd(cause: .connectionLost) }
        }

        private func undelivered(_ ids: [Int64], in catalog: any CatalogStore, counts: WebhookCounts) throws -> Int {
            guard !ids.isEmpty else { return counts.pending + counts.failed }
            let rows = try catalog.query { c throws(CatalogError) in try c.webhooks(WebhookFilter(ids: ids)) }
            return rows.filter { $0.status != .delivered }.count
        }
    }
}
