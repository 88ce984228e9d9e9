import Archive
import ArchiveUpload
import DiskLayout
import Foundation
import Logging
import ObjectStorage
import Outcomes
import Recorder

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
        let uploader = ArchiveUploader(client: client, catalog: catalog, options: configuration.options, logger: logger)
        for session in sessions {
            guard let layout = directory.confinedLayout(session: session.id) else {
                report.failures.append((session.id, .verification(file: session.id, "the catalog's session id is not one recbot makes; nothing uploaded or deleted")))
                continue
            }
            do {
                report.results.append(try await uploader.upload(session: session, layout: layout, lockPath: directory.uploadLockPath(session: session.id)))
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
        return report
    }
}
