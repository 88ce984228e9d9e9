import Archive
import DiskLayout
import Foundation
import PostgresTestSupport
import Retention
import Testing

/// Retention (issue 43), on both catalogs: `recbot prune --dry-run` lists exactly what the
/// prune then removes, and no held, still-recording, unverified or unuploaded session is touched.
@Suite(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is not installed: deploy/install-deps.sh installs it"))
struct RetentionContractTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-prune-\(UUID())").path
    static let day: Int64 = 86_400_000
    static let now: Int64 = 100 * day

    /// A session started `daysAgo`, ended unless `open`, with one file of `bytes` on `host`, verified unless told.
    @discardableResult
    func session(_ catalog: any CatalogStore, _ id: String, daysAgo: Int64, open: Bool = false, verified: Bool = true, host: String = "here",
                 bytes: Int = 1_000, channel: String = "room") throws -> String {
        let started = Self.now - daysAgo * Self.day
        try catalog.insertSession(SessionRecord(id: id, channelID: channel, startedAt: started))
        let layout = DataDirectory(path: root).layout(session: id)
        try FileManager.default.createDirectory(atPath: layout.directory, withIntermediateDirectories: true)
        if host == "here" {
            try Data(count: bytes).write(to: URL(fileURLWithPath: layout.path(of: "archive-S.webm")))
            try Data(count: 10).write(to: URL(fileURLWithPath: layout.path(of: "archive-S.json")))
        }
        var row = RecordingRecord(sessionID: id, connectionID: "S", part: 0, path: layout.catalogPath("archive-S.webm"), videoCodec: "VP8",
                                  audioCodec: nil, startedAt: started, status: .complete)
        row.host = host
        row = try catalog.insertRecording(row)
        if verified { try catalog.recordVerification(recordingID: try #require(row.id), status: .verified, at: started, report: "{}") }
        try catalog.insertEvent(EventRecord(sessionID: id, kind: .signaling, eventType: "notify", receivedAt: started, payload: .json("{}")))
        if !open { try catalog.endSession(id: id, endedAt: started + 60_000, endReason: "duration-elapsed", exitStatus: 0) }
        return id
    }

    func ids(_ n: Int) -> String { "01JD00000000000000000000" + String(format: "%02d", n) }

    @Test(arguments: CatalogBackend.allCases) func aDryRunListsWhatThePruneRemovesAndKeepsWhatItMust(backend: CatalogBackend) throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try backend.makeCatalog()
        let old = try session(catalog, ids(1), daysAgo: 40, bytes: 5_000)
        let held = try session(catalog, ids(2), daysAgo: 40)
        #expect(try catalog.holdSession(id: held, at: Self.now, reason: "legal"))
        let open = try session(catalog, ids(3), daysAgo: 40, open: true)
        let unverified = try session(catalog, ids(4), daysAgo: 40, verified: false)
        let uploading = try session(catalog, ids(5), daysAgo: 40)
        _ = try catalog.saveUpload(UploadRecord(sessionID: uploading, fileName: "archive-S.webm", objectURL: "s3://b/archive-S.webm",
                                                endpoint: "http://s3", bytes: 1_000, startedAt: Self.now))
        try session(catalog, ids(6), daysAgo: 10)  // recent
        let elsewhere = try session(catalog, ids(7), daysAgo: 40, host: "there")
        let policy = PrunePolicy(startedBefore: Self.now - 30 * Self.day, host: "here")
        let selection = PruneSelection(catalog: catalog, dataDirectory: DataDirectory(path: root))

        let planned = try selection.decisions(policy)
        #expect(planned.map(\.session.id) == [old, held, open, unverified, uploading],
                "oldest first; the recent one is not due, and one with nothing on this host is another host's to prune")
        let verdicts = Dictionary(uniqueKeysWithValues: planned.map { ($0.session.id, $0.verdict) })
        #expect(verdicts[old] == .prune && verdicts[held] == .keep("on hold: legal") && verdicts[open] == .keep("still being recorded"))
        #expect(verdicts[unverified] == .keep("1 of 1 files not verified (`recbot verify --pending`)"))
        #expect(verdicts[uploading] == .keep("an upload is not finished (`recbot upload --pending`)"))
        #expect(planned.first?.bytes == 5_010 && planned.first?.files.count == 2)

        let pruner = SessionPruner(catalog: catalog, dataDirectory: DataDirectory(path: root))
        let outcomes = planned.map { pruner.prune($0, policy: policy, now: Self.now) }
        let removed = outcomes.filter { !$0.removed.isEmpty }.map(\.decision.session.id)
        #expect(removed == [old] && outcomes.allSatisfy { $0.error == nil }, "\(outcomes.map(\.error))")
        #expect(outcomes.first?.bytesFreed == 5_010)
        #expect(!FileManager.default.fileExists(atPath: DataDirectory(path: root).layout(session: old).directory))
        for kept in [held, open, unverified, uploading] {
            #expect(FileManager.default.fileExists(atPath: DataDirectory(path: root).layout(session: kept).path(of: "archive-S.webm")))
            #expect(try catalog.session(id: kept)?.prunedAt == nil)
        }
        let pruned = try #require(try catalog.session(id: old))
        let prunedRows = try catalog.recordings(RecordingFilter(sessionID: old))
        #expect(pruned.prunedAt == Self.now && prunedRows.allSatisfy { $0.prunedAt == Self.now })
        #expect(try catalog.events(EventFilter(sessionID: old)).count == 1, "the events stay unless asked")
        #expect(try catalog.session(id: elsewhere)?.prunedAt == nil, "its file on another host is that host's to prune")

        #expect(try selection.decisions(policy).filter { $0.verdict == .prune }.isEmpty, "a second prune finds nothing more")
        #expect(try catalog.recordings(RecordingFilter(sessionID: elsewhere)).first?.prunedAt == nil)
    }

    /// `recbot compose` writes into the session's directory by default: the prune removes that
    /// file and its catalog row (the row would name a file that is gone); a composition written
    /// elsewhere with `--out` is not the prune's, and keeps its file and row.
    @Test(arguments: CatalogBackend.allCases) func aCompositionInTheSessionsDirectoryGoesWithItsRow(backend: CatalogBackend) throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try backend.makeCatalog()
        let id = try session(catalog, ids(1), daysAgo: 40)
        let layout = DataDirectory(path: root).layout(session: id)
        try Data(count: 300).write(to: URL(fileURLWithPath: layout.path(of: "composed-\(id).webm")))
        let elsewhere = root + "/exports/meeting.webm"
        try FileManager.default.createDirectory(atPath: root + "/exports", withIntermediateDirectories: true)
        try Data(count: 200).write(to: URL(fileURLWithPath: elsewhere))
        for path in [layout.catalogPath("composed-\(id).webm"), "exports/meeting.webm"] {
            try catalog.saveComposition(CompositionRecord(sessionID: id, path: path, captionsPath: nil, layout: "grid", fromMs: 0, durationMs: 60_000,
                                                          width: 1280, height: 720, fps: 30, videoCodec: "VP8", audioCodec: "OPUS", senders: 1,
                                                          bytes: 300, host: "here", composedAt: Self.now - 39 * Self.day))
        }
        let policy = PrunePolicy(startedBefore: Self.now - 30 * Self.day, host: "here")
        let planned = try PruneSelection(catalog: catalog, dataDirectory: DataDirectory(path: root)).decisions(policy)
        let outcome = try #require(planned.first.map { SessionPruner(catalog: catalog, dataDirectory: DataDirectory(path: root)).prune($0, policy: policy, now: Self.now) })
        #expect(outcome.error == nil && outcome.compositionsRemoved == 1 && outcome.removed.count == 3, "\(outcome)")
        #expect(try catalog.compositions(CompositionFilter(sessionID: id)).map(\.path) == ["exports/meeting.webm"])
        #expect(FileManager.default.fileExists(atPath: elsewhere) && !FileManager.default.fileExists(atPath: layout.directory))
    }

    @Test(arguments: CatalogBackend.allCases) func aHoldTakenAfterTheSelectionWinsAndEventsGoOnlyWhenAsked(backend: CatalogBackend) throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try backend.makeCatalog()
        let first = try session(catalog, ids(1), daysAgo: 40)
        let second = try session(catalog, ids(2), daysAgo: 40)
        var policy = PrunePolicy(startedBefore: Self.now - 30 * Self.day, host: "here")
        policy.deleteEvents = true
        let planned = try PruneSelection(catalog: catalog, dataDirectory: DataDirectory(path: root)).decisions(policy)
        #expect(planned.count == 2 && planned.allSatisfy { $0.verdict == .prune })
        #expect(try catalog.holdSession(id: first, at: Self.now, reason: nil))
        let pruner = SessionPruner(catalog: catalog, dataDirectory: DataDirectory(path: root))
        let outcomes = planned.map { pruner.prune($0, policy: policy, now: Self.now) }
        #expect(outcomes[0].removed.isEmpty && outcomes[0].error?.contains("on hold") == true, "\(outcomes[0])")
        #expect(outcomes[1].mark == PruneMark(recordings: 1, sessionPruned: true, eventsDeleted: 1))
        #expect(try catalog.events(EventFilter(sessionID: second)).isEmpty && catalog.events(EventFilter(sessionID: first)).count == 1)
        #expect(try catalog.holdSession(id: first, at: nil, reason: nil) && catalog.session(id: first)?.heldAt == nil)
        #expect(try !catalog.holdSession(id: ids(9), at: Self.now, reason: nil), "no such session")
    }

    @Test(arguments: CatalogBackend.allCases) func anExpiredRetentionAndAConfiguredUploadDecide(backend: CatalogBackend) throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let catalog = try backend.makeCatalog()
        var kept = SessionRecord(id: ids(1), channelID: "room", startedAt: Self.now - Self.day)
        kept.retainUntil = Self.now + Self.day
        var expired = SessionRecord(id: ids(2), channelID: "room", startedAt: Self.now - 2 * Self.day)
        expired.retainUntil = Self.now - 1
        for record in [kept, expired] {
            try catalog.insertSession(record)
            try catalog.endSession(id: record.id, endedAt: record.startedAt + 1_000, endReason: "duration-elapsed", exitStatus: 0)
            let layout = DataDirectory(path: root).layout(session: record.id)
            try FileManager.default.createDirectory(atPath: layout.directory, withIntermediateDirectories: true)
            try Data(count: 100).write(to: URL(fileURLWithPath: layout.path(of: "report-\(record.id).json")))
        }
        let target = PrunePolicy.UploadTarget(objectURLPrefix: "s3://bucket/rec/", endpoint: "http://s3")
        let policy = PrunePolicy(expiredBy: Self.now, host: "here", upload: target)
        let selection = PruneSelection(catalog: catalog, dataDirectory: DataDirectory(path: root))
        #expect(try selection.decisions(policy).map(\.verdict) == [.keep("not uploaded to s3://bucket/rec/ yet")])
        _ = try catalog.saveUpload(UploadRecord(sessionID: expired.id, fileName: "report-\(expired.id).json",
                                                objectURL: "s3://bucket/rec/\(expired.id)/report-\(expired.id).json", endpoint: "http://s3",
                                                bytes: 100, startedAt: Self.now, status: .uploaded))
        let decided = try selection.decisions(policy)
        #expect(decided.map(\.session.id) == [expired.id] && decided.map(\.verdict) == [.prune], "only the expired one is due")
    }
}
