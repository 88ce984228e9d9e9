import Archive
import ArchiveUpload
import DiskLayout
import Foundation
import Logging
import ObjectStorage
import Outcomes
import Recorder
import SystemClock
import Webhooks

/// Uploads sessions one after another, for `upload` and `join --upload`: the bucket is
/// checked first (a refused key or a missing bucket is one clear line, not a failure per
/// file), a session that fails is reported and the others still go, unless the failure would
/// repeat for all of them (credentials, configuration, the catalog).
struct SessionUploads {
    let configuration: UploadConfiguration
    let catalog: any CatalogStore
    let directory: DataDirectory
    let logger: Logger
    /// `--pending` leaves a session another upload holds to that one, instead of failing.
    var skipBusy = false
    /// sora-archive-uploader's webhooks for what went up (nil: none).
    var webhooks: WebhookSettings?

    struct Report {
        var results: [SessionUploadResult] = []
        var failures: [(session: String, error: UploadError)] = []
        var cause: EndCause { failures.first?.error.endCause ?? .completed }
    }

    func run(_ sessions: [SessionRecord]) async -> Report {
        let client = configuration.makeClient(logger: logger)
        var report = Report()
        do {
            try await client.checkBucket(configuration.options.destination.bucket)
        } catch {
            Console.note("error: \(error)")
            report.failures.append(("", .storage(error, file: nil)))
            await client.shutdown()
            return report
        }
        let uploader = ArchiveUploader(client: client, catalog: catalog, options: configuration.options, logger: logger,
                                       clock: SystemTimeSource())
        for session in sessions {
            guard let layout = directory.confinedLayout(session: session.id) else {
                report.failures.append((session.id, .verification(file: session.id, "the catalog's session id is not one recbot makes; nothing uploaded or deleted")))
                continue
            }
            do {
                let result = try await uploader.upload(session: session, layout: layout, lockPath: directory.uploadLockPath(session: session.id))
                report.results.append(result)
                queueWebhooks(session, result)
            } catch {
                if case .busy = error, skipBusy {
                    Console.note("session \(session.id) is being uploaded by another process: skipped")
                    continue
                }
                report.failures.append((session.id, error))
                Console.note("upload of session \(session.id) failed: \(error)")
                if case .storage(let s3, _) = error, s3.kind == .credentials || s3.kind == .configuration { break }
                if case .catalog = error { break }
            }
        }
        await client.shutdown()
        if let webhooks, (try? catalog.webhookCounts().pending) ?? 0 > 0 {
            let sent = await WebhookSender.drainQueued(catalog, settings: webhooks, seconds: SessionUploads.webhookSeconds,
                                                           clock: SystemTimeSource(), logger: logger)
            logger.info("upload webhooks sent", metadata: ["delivered": "\(sent.delivered)"])
        }
        return report
    }

    /// How long an upload spends sending its webhooks (the rest stay queued).
    static let webhookSeconds = 10.0

    /// Into the outbox (an upload run again queues nothing twice: the ids come from the objects).
    private func queueWebhooks(_ session: SessionRecord, _ result: SessionUploadResult) {
        guard let webhooks else { return }
        let clientIDs = Dictionary(((try? catalog.connections(sessionID: session.id)) ?? []).compactMap { connection in
            connection.clientID.map { (connection.connectionID, $0) }
        }, uniquingKeysWith: { first, _ in first })
        let objects = result.files.map { UploaderEvents.UploadedObject(fileName: $0.record.fileName, objectURL: $0.record.objectURL) }
        let now = SystemTimeSource().wallClockMilliseconds()
        let rows = UploaderEvents.events(session: session, clientIDs: clientIDs, objects: objects, now: now).flatMap { $0.rows(settings: webhooks, now: now) }
        do { try catalog.enqueueWebhooks(rows) } catch { Console.note("upload webhooks not queued: \(error)") }
    }
}
