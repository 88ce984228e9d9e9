/// What the muxer remembers of every cluster it has emitted: where it lies, its times, the
/// frame counts so far, and whether it is a cue point. Cues are written only at the end, and a
/// file cut short by a write error is finalized at its last whole cluster, so nothing here can
/// be forgotten early.
///
/// An hour-long file has thousands of clusters in each of hundreds of files, so entries are
/// stored as LEB128 deltas from the previous entry: about ten bytes a cluster instead of the
/// 56 two arrays of structs took (the soak saw that growth as RSS steps at every doubling).
struct ClusterLog: Sendable {
    struct Entry: Equatable, Sendable {
        /// Absolute file offsets of the cluster's first byte and of the byte after it.
        var start: UInt64
        var end: UInt64
        var timestampMilliseconds: Int64
        var lastBlockMilliseconds: Int64
        /// Frames in the file up to and including this cluster.
        var videoFrames: Int
        var audioFrames: Int
        /// The track a cue for this cluster points at; nil when the cluster is not cued.
        var cueTrack: UInt8?
    }

    private(set) var count = 0
    private(set) var cueCount = 0
    private var bytes: [UInt8] = []
    private var last: Entry?

    var lastEntry: Entry? { last }
    /// Bytes the log holds (for tests that keep it compact).
    var storedBytes: Int { bytes.count }

    mutating func append(_ entry: Entry) {
        let previous = last ?? Self.origin
        precondition(entry.start >= previous.end && entry.end >= entry.start
                     && entry.videoFrames >= previous.videoFrames && entry.audioFrames >= previous.audioFrames,
                     "clusters are logged in file order")
        bytes.append(entry.cueTrack ?? 0)
        appendVarint(entry.start - previous.end)
        appendVarint(entry.end - entry.start)
        appendVarint(Self.zigzag(entry.timestampMilliseconds &- previous.timestampMilliseconds))
        appendVarint(Self.zigzag(entry.lastBlockMilliseconds &- entry.timestampMilliseconds))
        appendVarint(UInt64(entry.videoFrames - previous.videoFrames))
        appendVarint(UInt64(entry.audioFrames - previous.audioFrames))
        count += 1
        if entry.cueTrack != nil { cueCount += 1 }
        last = entry
    }

    /// Keeps the clusters that end at or before `length` and returns the last of them.
    @discardableResult
    mutating func truncate(toEndAtOrBefore length: UInt64) -> Entry? {
        var reader = Reader(bytes: bytes)
        var kept = (entry: Entry?.none, byteCount: 0, count: 0, cues: 0)
        while let entry = reader.next(), entry.end <= length {
            kept = (entry, reader.offset, kept.count + 1, kept.cues + (entry.cueTrack == nil ? 0 : 1))
        }
        bytes.removeSubrange(kept.byteCount...)
        (last, count, cueCount) = (kept.entry, kept.count, kept.cues)
        return kept.entry
    }

    mutating func removeAll() {
        self = ClusterLog()
    }

    var entries: Entries { Entries(bytes: bytes) }

    struct Entries: Sequence {
        fileprivate let bytes: [UInt8]
        func makeIterator() -> Reader { Reader(bytes: bytes) }
    }

    struct Reader: IteratorProtocol {
        fileprivate let bytes: [UInt8]
        fileprivate(set) var offset = 0
        private var previous = ClusterLog.origin

        fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func next() -> Entry? {
            guard offset < bytes.count else { return nil }
            let cue = bytes[offset]
            offset += 1
            let start = previous.end + readVarint()
            let end = start + readVarint()
            let timestamp = previous.timestampMilliseconds &+ ClusterLog.unzigzag(readVarint())
            let lastBlock = timestamp &+ ClusterLog.unzigzag(readVarint())
            let video = previous.videoFrames + Int(readVarint())
            let audio = previous.audioFrames + Int(readVarint())
            previous = Entry(start: start, end: end, timestampMilliseconds: timestamp, lastBlockMilliseconds: lastBlock,
                             videoFrames: video, audioFrames: audio, cueTrack: cue == 0 ? nil : cue)
            return previous
        }

        private mutating func readVarint() -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = bytes[offset]
                offset += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
    }

    private static let origin = Entry(start: 0, end: 0, timestampMilliseconds: 0, lastBlockMilliseconds: 0,
                                      videoFrames: 0, audioFrames: 0, cueTrack: nil)

    private mutating func appendVarint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    private static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    private static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}
