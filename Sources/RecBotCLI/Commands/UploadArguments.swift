import ArchiveUpload
import ArgumentParser
import Foundation
import Logging
import ObjectStorage
import TLSFailure

/// Where and how uploads go, for `upload` and `join --upload`. Credentials are never flags
/// (ps would show them): AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN) in the
/// environment, or RECBOT_S3_ACCESS_KEY_ID / RECBOT_S3_SECRET_ACCESS_KEY in the config file.
struct UploadArguments: ParsableArguments {
    @Option(name: .customLong("s3-endpoint"), help: ArgumentHelp(
        "S3-compatible server, http(s)://host[:port] (MinIO, SeaweedFS, Ceph…); default AWS. Also RECBOT_S3_ENDPOINT.", valueName: "url"))
    var endpoint: String?
    @Option(name: .customLong("s3-ca-file"), help: ArgumentHelp(
        "PEM certificates to verify an https endpoint with, instead of the system's (a private CA). Also RECBOT_S3_CA_FILE.", valueName: "path"))
    var caFile: String?
    @Option(name: .customLong("s3-region"), help: ArgumentHelp("Signing region (default us-east-1). Also RECBOT_S3_REGION.", valueName: "region"))
    var region: String?
    @Option(name: .customLong("upload-part-size"), help: ArgumentHelp(
        "Multipart part size in MiB (default 16; 5…512). Also RECBOT_UPLOAD_PART_SIZE.", valueName: "MiB"))
    var partSizeMiB: Int?
    @Option(name: .customLong("upload-retries"), help: ArgumentHelp(
        "Retries of a request the server could not serve, with backoff (default 5). Also RECBOT_UPLOAD_RETRIES.", valueName: "count"))
    var retries: Int?
    @Flag(name: .customLong("delete-after-upload"), help: "Remove a session's local files once every one of them uploaded and verified (also RECBOT_DELETE_AFTER_UPLOAD=1).")
    var deleteAfterUpload = false

    /// The configuration a command cannot go without: none configured is a usage error
    /// (`missing` says what to give), one that does not parse or load a configuration error.
    func required(destination: String?, settings: Settings, environment: [String: String], missing: String) throws -> UploadConfiguration {
        let configured: UploadConfiguration?
        do { configured = try configuration(destination: destination, settings: settings, environment: environment) } catch {
            throw Console.fail(error, cause: .invalidConfiguration)
        }
        guard let configured else { throw Console.fail(missing, cause: .badCommandLine) }
        return configured
    }

    /// nil when no destination is configured.
    func configuration(destination: String?, settings: Settings, environment: [String: String]) throws -> UploadConfiguration? {
        guard let text = destination ?? settings[.uploadURL] else { return nil }
        do {
            let destination = try S3Destination.parse(text)
            let endpoint = try S3Endpoint(url: endpoint ?? settings[.s3Endpoint],
                                          region: region ?? settings[.s3Region] ?? environment["AWS_REGION"])
            // The key pair (and token) comes whole from one place: the environment when it names a
            // key id, else the config file; a pair mixed from both would only confuse.
            let fromEnvironment = !(environment["AWS_ACCESS_KEY_ID"] ?? "").isEmpty
            let keys = fromEnvironment ? environment : [
                "AWS_ACCESS_KEY_ID": settings[.s3AccessKeyID] ?? "", "AWS_SECRET_ACCESS_KEY": settings[.s3SecretAccessKey] ?? "",
            ]
            let credentials = try S3Credentials.fromEnvironment(keys)
            let mebibytes = try partSizeMiB ?? Self.integer(settings, .uploadPartSize) ?? Int(PartPlan.defaultPartSize >> 20)
            // At most 512 MiB: a part is held in memory while it is sent.
            guard (5...512).contains(mebibytes) else { throw ValidationError("--upload-part-size must be 5…512 MiB") }
            let retries = try retries ?? Self.integer(settings, .uploadRetries) ?? 5
            guard (0...20).contains(retries) else { throw ValidationError("--upload-retries must be 0…20") }
            let delete = deleteAfterUpload || settings.isOn(.deleteAfterUpload)
            let caFile = caFile ?? settings[.s3CAFile]
            if let caFile, let problem = TLSFailure.problem(withTrustFile: caFile) { throw ValidationError("--s3-ca-file: \(problem)") }
            return UploadConfiguration(
                options: UploadOptions(destination: destination, partSize: Int64(mebibytes) << 20, deleteAfterUpload: delete),
                endpoint: endpoint, credentials: credentials, retry: RetryPolicy(retries: retries), caFile: caFile)
        } catch let error as S3Error {
            throw ValidationError("\(error)")
        }
    }
}

extension UploadArguments {
    static func integer(_ settings: Settings, _ name: SettingName) throws -> Int? {
        guard let text = settings[name] else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name.variable)=\(text): not a whole number") }
        return value
    }
}

struct UploadConfiguration: Sendable {
    var options: UploadOptions
    var endpoint: S3Endpoint
    var credentials: S3Credentials
    var retry: RetryPolicy
    var caFile: String?

    func makeClient(logger: Logger) -> S3Client {
        S3Client(endpoint: endpoint, credentials: credentials, retry: retry, caFile: caFile, logger: logger)
    }
}
