import Archive
import ArchiveUpload
import ArgumentParser
import Foundation
import Logging
import Outcomes
import Webhooks

struct UploadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Put finished sessions' recordings, sidecars and reports into S3-compatible storage.",
        discussion: """
            Objects are named <prefix>/<session id>/<file name>, sora-archive-uploader's layout:
            media first, then sidecars, the report last. Large files go up in parts, each checked
            by the server (Content-MD5); every object is then checked (size and ETag) before the
            catalog records it as uploaded. An upload that was interrupted resumes where it
            stopped. Local files are removed only with --delete-after-upload, and only once all of
            a session verified. --pending uploads every ended session whose report is not at the
            destination yet (for cron, after `recbot repair`), skipping sessions another upload on
            this host is sending. Permissions the key needs: s3:ListBucket (the bucket check),
            s3:PutObject, s3:GetObject (the HEAD check), s3:ListMultipartUploadParts and
            s3:AbortMultipartUpload.
            Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) in the
            environment, or RECBOT_S3_ACCESS_KEY_ID / RECBOT_S3_SECRET_ACCESS_KEY in the config file.

            """ + ExitStatus.helpLine([.success, .usage, .notFound, .storage, .configuration, .catalogUnavailable, .catalogCredentials,
                                       .uploadFailed, .uploadCredentials])
    )

    @OptionGroup var common: CommonOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup(title: "Object storage") var uploadArguments: UploadArguments
    @OptionGroup(title: "Webhooks") var webhookArguments: WebhookArguments
    @Argument(help: ArgumentHelp("Session ids to upload.", valueName: "session")) var sessions: [ULIDArgument] = []
    @Option(name: .customLong("to"), help: ArgumentHelp("Destination s3://bucket[/prefix] (also RECBOT_UPLOAD_URL).", valueName: "url"))
    var destination: String?
    @Flag(help: "Upload every ended session not uploaded to this destination yet.") var pending = false
    @Option(help: "With --pending: only this channel's sessions.") var channel: String?

    func validate() throws {
        if sessions.isEmpty && !pending { throw ValidationError("name a session, or pass --pending") }
    }

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let settings = try common.settings(environment: environment)
        let webhooks: WebhookSettings?
        do { webhooks = try webhookArguments.recordingSettings(settings) } catch { throw Console.fail(error, cause: .invalidConfiguration) }
        let configuration = try uploadArguments.required(destination: destination, settings: settings, environment: environment,
                                                         missing: "--to s3://bucket[/prefix] (or RECBOT_UPLOAD_URL) is required")
        guard let catalog = try common.openCatalogForWriting() else {
            if sessions.isEmpty { return }
            throw Console.fail("no session \(sessions[0].value): there is no catalog", cause: .notFound)
        }
        let directory = common.dataDirectory
        var targets: [SessionRecord] = []
        for id in sessions {
            guard let session = try catalog.query({ c throws(CatalogError) in try c.session(id: id.value) }) else {
                throw Console.fail("no session \(id.value)", cause: .notFound)
            }
            targets.append(session)
        }
        if pending {
            let waiting: [SessionRecord]
            do {
                waiting = try ArchiveUploader.pendingSessions(catalog: catalog, destination: configuration.options.destination,
                                                              endpoint: configuration.endpoint.description, channel: channel)
            } catch {
                throw Console.fail(error, cause: error.endCause)
            }
            // A session that recorded nothing has no directory: nothing to send.
            targets += waiting.filter { session in
                directory.confinedLayout(session: session.id).map { FileManager.default.fileExists(atPath: $0.directory) } ?? true
            }
        }
        let report = await SessionUploads(configuration: configuration, catalog: catalog, directory: directory,
                                          logger: Logger(label: "recbot.upload"), skipBusy: pending, webhooks: webhooks).run(targets)
        if output.json {
            Console.print(JSONValue.array(report.results.flatMap(UploadCommand.json)).rendered())
        } else if report.results.isEmpty && report.failures.isEmpty {
            Console.note("nothing to upload")
        } else if !report.results.isEmpty {
            Console.print(UploadCommand.table(report.results).rendered())
        }
        for result in report.results { if let why = result.keptLocalFiles { Console.note("session \(result.sessionID): local files kept: \(why)") } }
        if !report.failures.isEmpty { throw CommandEnd(cause: report.cause) }
    }

    static func json(_ result: SessionUploadResult) -> [JSONValue] {
        result.files.map { file in
            .object([
                ("session_id", .string(result.sessionID)), ("file", .string(file.record.fileName)), ("bytes", .int(file.record.bytes)),
                ("outcome", .string(file.outcome.rawValue)), ("object_url", .string(file.record.objectURL)),
                ("endpoint", .string(file.record.endpoint)), ("etag", .string(file.record.etag)),
                ("local_deleted", .bool(file.record.localDeletedAt != nil)),
            ])
        }
    }

    static func table(_ results: [SessionUploadResult]) -> TextTable {
        var table = TextTable([("SESSION", .left), ("FILE", .left), ("BYTES", .right), ("RESULT", .left), ("OBJECT", .left)])
        for result in results {
            for (index, file) in result.files.enumerated() {
                let outcome = file.outcome.rawValue + (file.record.localDeletedAt != nil ? ", local copy removed" : "")
                table.add([index == 0 ? result.sessionID : nil, file.record.fileName, String(file.record.bytes), outcome, file.record.objectURL])
            }
        }
        return table
    }
}
