import Testing
@testable import WebM

/// The muxer's per-cluster memory: every entry reads back exactly, truncation keeps exactly the
/// clusters that end in time, and an hour of one-second clusters stays a few tens of KiB.
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

    @Test func everyEntryReadsBackExactly() {
        var log = ClusterLog()
        let entries = Self.hourOfClusters()
        for entry in entries { log.append(entry) }
        #expect(Array(log.entries) == entries)
        #expect(log.count == 3_600)
        #expect(log.cueCount == 1_200)
        #expect(log.lastEntry == entries.last)
    }

    @Test func anHourOfClustersTakesAboutTenBytesEach() {
        var log = ClusterLog()
        for entry in Self.hourOfClusters() { log.append(entry) }
        // Two arrays of structs took 56 bytes a cluster (200 KiB an hour per file).
        #expect(log.storedBytes <= 3_600 * 12)
    }

    @Test func extremeValuesSurviveTheDeltas() {
        var log = ClusterLog()
        let far = ClusterLog.Entry(start: 1 << 40, end: UInt64.max / 2, timestampMilliseconds: Int64.max / 4,
                                   lastBlockMilliseconds: Int64.max / 4, videoFrames: Int(Int32.max), audioFrames: 0, cueTrack: 2)
        let back = ClusterLog.Entry(start: UInt64.max / 2, end: UInt64.max / 2, timestampMilliseconds: 0,
                                    lastBlockMilliseconds: 0, videoFrames: Int(Int32.max), audioFrames: 1, cueTrack: nil)
        log.append(far)
        log.append(back)
        #expect(Array(log.entries) == [far, back])
    }

    @Test func truncationKeepsTheClustersThatEndInTime() {
        var log = ClusterLog()
        let entries = Self.hourOfClusters()
        for entry in entries { log.append(entry) }
        let cut = entries[1_000].end + 5
        let kept = log.truncate(toEndAtOrBefore: cut)
        #expect(kept == entries[1_000])
        #expect(Array(log.entries) == Array(entries[...1_000]))
        #expect(log.count == 1_001)
        #expect(log.cueCount == entries[...1_000].filter { $0.cueTrack != nil }.count)
        // Appending goes on from the kept entry.
        log.append(entries[1_001])
        #expect(Array(log.entries) == Array(entries[...1_001]))

        #expect(log.truncate(toEndAtOrBefore: 599) == nil)
        #expect(log.count == 0 && log.cueCount == 0 && Array(log.entries).isEmpty)
    }
}
