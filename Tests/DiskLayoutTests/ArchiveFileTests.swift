import DiskLayout
import Testing

@Suite struct ArchiveFileTests {
    let layout = ArchiveLayout(recordingsRoot: "/data/recordings", recordingID: "01JD2G0000AAAAAAAAAAAAAAAA")

    @Test func everyNameTheLayoutWritesClassifiesBackToItsSender() {
        for (id, part) in [("SENDER1", 0), ("SENDER1", 1), ("a_b-C", 12), ("X", 9_999), ("X", 10_000)] {
            #expect(ArchiveFile(name: layout.mediaFilename(connectionID: id, part: part)) == .media(connectionID: id, part: part))
            #expect(ArchiveFile(name: layout.sidecarFilename(connectionID: id, part: part)) == .sidecar(connectionID: id, part: part))
            #expect(ArchiveFile(name: layout.messagesFilename(connectionID: id, part: part)) == .messages(connectionID: id, part: part))
        }
        #expect(ArchiveFile(name: layout.eventLogFilename) == .eventLog)
        #expect(ArchiveFile(name: layout.splitEndFilename(connectionID: "SENDER1")) == .splitEnd(connectionID: "SENDER1"))
        #expect(ArchiveFile(name: layout.reportFilename) == .report(recordingID: "01JD2G0000AAAAAAAAAAAAAAAA"))
        #expect(ArchiveFile(name: layout.compositionFilename) == .composition(recordingID: "01JD2G0000AAAAAAAAAAAAAAAA", captions: false))
        #expect(ArchiveFile(name: layout.compositionCaptionsFilename) == .composition(recordingID: "01JD2G0000AAAAAAAAAAAAAAAA", captions: true))
    }

    /// A composition goes up after the report (it is made from the recording, not part of it),
    /// and each kind of file has its MIME type.
    @Test func compositionsUploadAfterTheReportAndEachFileHasItsType() {
        let names = ["report-R.json", "composed-R.vtt", "composed-R.webm", "archive-X.webm", "archive-X.messages.vtt", "events.jsonl", "archive-X.json"]
        let types = Dictionary(uniqueKeysWithValues: names.map { ($0, ArchiveFile(name: $0)!.contentType) })
        #expect(ArchiveFile(name: "composed-R.webm")!.uploadRank > ArchiveFile(name: "report-R.json")!.uploadRank)
        #expect(types["composed-R.webm"] == "video/webm" && types["archive-X.webm"] == "video/webm" && types["archive-X.json"] == "application/json")
        #expect(types["composed-R.vtt"] == "text/vtt; charset=utf-8" && types["archive-X.messages.vtt"] == "text/vtt; charset=utf-8")
        #expect(types["events.jsonl"] == "application/x-ndjson")
        for stranger in ["composed-.webm", "composed-a b.webm", "composed-R.webm.tmp", "composed-R.json"] { #expect(ArchiveFile(name: stranger) == nil, "\(stranger)") }
    }

    @Test func namesThatAreNotPartOfARecordingAreNotClassified() {
        let strangers = [
            "archive-SENDER1.json.tmp", ".archive-SENDER1.webm", "archive-.webm", "archive-../x.webm", "archive-a b.webm",
            "split-archive-SENDER1_0000.webm", "split-archive-SENDER1.webm", "split-archive-SENDER1_x.webm", "report-.json",
            "catalog.sqlite", "archive-SENDER1.mkv", "", "split-archive-end-.json",
            "archive-" + String(repeating: "A", count: 65) + ".webm",
            "archive-SENDER1.vtt", "archive-.messages.vtt", "archive-a b.messages.vtt", "events.jsonl.tmp", "events.json",
        ]
        for name in strangers { #expect(ArchiveFile(name: name) == nil, "\(name)") }
    }

    /// An id may hold "_" and "-": the split part is what follows the last "_", and a split end
    /// marker is not taken for a sidecar.
    @Test func idsWithSeparatorsStayWhole() {
        #expect(ArchiveFile(name: "split-archive-a_b_0002.webm") == .media(connectionID: "a_b", part: 2))
        #expect(ArchiveFile(name: "split-archive-end-a_b.json") == .splitEnd(connectionID: "a_b"))
        #expect(ArchiveFile(name: "archive-end-a.json") == .sidecar(connectionID: "end-a", part: 0))
    }

    /// Exports go up after the media and sidecars and before the report, which says "all here".
    @Test func exportsUploadBeforeTheReport() {
        let ranks = ["archive-X.webm", "archive-X.json", "archive-X.messages.vtt", "events.jsonl", "report-R.json"].map { ArchiveFile(name: $0)!.uploadRank }
        #expect(ranks == ranks.sorted())
        #expect(ranks[2] == ranks[3] && ranks[3] < ranks[4] && ranks[1] < ranks[2])
    }

    @Test func pathsStayInTheSessionDirectory() {
        #expect(layout.path(of: "archive-X.webm") == "/data/recordings/01JD2G0000AAAAAAAAAAAAAAAA/archive-X.webm")
        #expect(layout.path(of: "../../etc/passwd") == "/data/recordings/01JD2G0000AAAAAAAAAAAAAAAA/passwd")
        #expect(layout.reportPath == "/data/recordings/01JD2G0000AAAAAAAAAAAAAAAA/report-01JD2G0000AAAAAAAAAAAAAAAA.json")
        let directory = DataDirectory(path: "/data/")
        #expect(directory.catalogPath == "/data/catalog.sqlite")
        #expect(directory.spoolPath(session: "S") == "/data/spool/S.sqlite")
    }

    /// An absolute path back to the catalog's name for it, and the inverse of `absolute(catalogPath:)`.
    @Test func absolutePathsMapBackToCatalogPaths() {
        for root in ["/data", "/data/"] {
            let directory = DataDirectory(path: root)
            #expect(directory.catalogPath(absolute: "/data/recordings/S/archive-X.webm") == "recordings/S/archive-X.webm")
            #expect(directory.catalogPath(absolute: "/database/recordings/S/archive-X.webm") == nil, "a sibling with the same prefix is outside")
            #expect(directory.catalogPath(absolute: "/elsewhere/archive-X.webm") == nil)
            #expect(directory.absolute(catalogPath: directory.catalogPath(absolute: "/data/a/b.webm") ?? "") == "/data/a/b.webm")
        }
    }
}
