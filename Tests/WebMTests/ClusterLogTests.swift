import Testing
@testable import WebM

/// The muxer's memory of its clusters: cues read back exactly and take a few bytes each, whole
/// clusters are kept only as far back as the writer can lag, and truncation keeps exactly the
/// clusters (and cues) that end in time.
@Suite struct ClusterLogTests {
    /// An hour of 1 s clusters at 2.5 Mbit/s video with 50 Opus frames a second, cued on
    /// every keyframe (one every 3 s), starting after a 600-byte header.
    static func hourOfClusters() -> [ClusterLog.Entry] {
        var entries: [ClusterLog.Entry] = []
        var end: UInt64 = 600
        for second in 0..<3_600 {
            let size = UInt64(300_000 + (second * 7_919) % 40_000)
            let time = Int64(second) * 1_000 + Int64(second % 3)
            entries.append(ClusterLog.Entry(
                start: end, end: end + size, timestampMilliseconds: time, lastBlockMilliseconds: time + 980,
                videoFrames: (second + 1) * 30, audioFrames: (second + 1) * 50,
                cueTrack: second % 3 == 0 ? 1 : nil))
            end += size
        }
        return entries
    }

    static func cues(of entries: some Sequence<ClusterLog.Entry>) -> [CueLog.Cue] {
        entries.compactMap { entry in entry.cueTrack.map { CueLog.Cue(time: entry.timestampMilliseconds, track: $0, position: entry.start) } }
    }

    static func logged(_ entries: [ClusterLog.Entry], retaining bytes: UInt64 = 64 << 20) -> ClusterLog {
        var log = ClusterLog(retainedBytes: bytes)
        for entry in entries { log.append(entry) }
        return log
    }

    @Test func cuesReadBackExactlyInAFewBytesEach() {
        let entries = Self.hourOfClusters()
        let log = Self.logged(entries)
        #expect(Array(log.cues.entries) == Self.cues(of: entries))
        #expect(log.count == 3_600 && log.cues.count == 1_200 && log.lastEntry == entries.last)
        // A cue is about six bytes; the structs it replaced took 56 a cluster.
        #expect(log.cues.storedBytes <= 1_200 * 7)
    }

    @Test func wholeClustersAreKeptOnlyAsFarBackAsTheWriterLags() {
        let log = Self.logged(Self.hourOfClusters(), retaining: 64 << 20)
        // 64 MiB of ~320 kB clusters, and one before them.
        #expect((200...240).contains(log.retainedCount), "\(log.retainedCount)")
    }

    @Test func extremeValuesSurviveTheDeltas() {
        var log = CueLog()
        log.append(time: Int64.max / 4, track: 2, position: 1 << 40)
        log.append(time: 0, track: 1, position: UInt64.max / 2)
        #expect(Array(log.entries) == [CueLog.Cue(time: Int64.max / 4, track: 2, position: 1 << 40),
                                       CueLog.Cue(time: 0, track: 1, position: UInt64.max / 2)])
    }

    @Test func truncationKeepsTheClustersThatEndInTime() {
        let entries = Self.hourOfClusters()
        var log = Self.logged(entries)
        let cut = entries[3_500].end + 5
        #expect(log.truncate(toEndAtOrBefore: cut) == .kept(entries[3_500], clusters: 3_501))
        #expect(Array(log.cues.entries) == Self.cues(of: entries[...3_500]))
        // Appending goes on from the kept cluster.
        log.append(entries[3_501])
        #expect(log.lastEntry == entries[3_501] && Array(log.cues.entries) == Self.cues(of: entries[...3_501]))
    }

    @Test func truncationFurtherBackThanTheLagIsRefused() {
        let entries = Self.hourOfClusters()
        var log = Self.logged(entries)
        guard case .beyondRetained(let oldest) = log.truncate(toEndAtOrBefore: entries[1_000].end) else {
            Issue.record("a length an hour back was answered"); return
        }
        #expect(oldest > entries[1_000].end)
        #expect(log.count == 3_600 && log.cues.count == 1_200, "nothing is forgotten by a refusal")
    }

    @Test func aShortFileKeepsEveryClusterAndCanLoseThemAll() {
        let entries = Array(Self.hourOfClusters().prefix(20))
        var log = Self.logged(entries)
        #expect(log.retainedCount == 20)
        #expect(log.truncate(toEndAtOrBefore: 599) == .noCluster)
        #expect(log.count == 0 && log.cues.count == 0 && log.lastEntry == nil)
    }
}
