/// What the muxer remembers of the clusters it has emitted, for the two things that need it
/// after the fact:
/// - the Cues, written at the end: every cued cluster's time, track and position, kept as
///   LEB128 deltas (`CueLog`, about six bytes a cue);
/// - finalizing a file cut short by a write error at its last whole cluster: only clusters
///   ending in the last `retainedBytes` of the file can be that one (the writer never lags the
///   muxer by more), so only those are kept, whole, with a few before.
///
/// Kept per cluster for the whole file, as two arrays of structs did, this grew by 56 bytes a
/// second per file: the soak saw it as RSS steps at every doubling.
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

    enum Truncation: Equatable {
        /// The last cluster that ends at or before the length, and how many clusters are kept.
        case kept(Entry, clusters: Int)
        /// No cluster ends that early: only the header is whole.
        case noCluster
        /// The length is before the clusters still remembered (the caller broke its promise).
        case beyondRetained(oldestKnownEnd: UInt64)
    }

    let retainedBytes: UInt64
    private(set) var count = 0
    private(set) var cues = CueLog()
    /// Clusters that may still be the last whole one; `recent[head...]` are live.
    private var recent: [Entry] = []
    private var head = 0
    private var forgotAny = false

    init(retainedBytes: UInt64) { self.retainedBytes = retainedBytes }

    var lastEntry: Entry? { recent.last }
    /// Clusters remembered whole (for tests that keep the log bounded).
    var retainedCount: Int { recent.count - head }

    mutating func append(_ entry: Entry) {
        if let cueTrack = entry.cueTrack { cues.append(time: entry.timestampMilliseconds, track: cueTrack, position: entry.start) }
        recent.append(entry)
        count += 1
        // The oldest is forgotten once the next one alone answers every length the writer can
        // still report (at least `retainedBytes` before the end).
        while recent.count - head >= 2, recent[head + 1].end + retainedBytes <= entry.end {
            head += 1
            forgotAny = true
        }
        if head >= 64 && head * 2 >= recent.count {
            recent.removeFirst(head)
            head = 0
        }
    }

    /// Keeps the clusters that end at or before `length` (and their cues).
    mutating func truncate(toEndAtOrBefore length: UInt64) -> Truncation {
        guard let index = recent[head...].lastIndex(where: { $0.end <= length }) else {
            if forgotAny, head < recent.count { return .beyondRetained(oldestKnownEnd: recent[head].end) }
            self = ClusterLog(retainedBytes: retainedBytes)
            return .noCluster
        }
        let kept = recent[index]
        count -= recent.count - 1 - index
        recent.removeSubrange((index + 1)...)
        cues.removeAll(fromPosition: kept.end)
        return .kept(kept, clusters: count)
    }
}

/// Cue points in file order as LEB128 deltas: track, time (zigzag) and position.
struct CueLog: Sendable {
    struct Cue: Equatable, Sendable {
        var time: Int64
        var track: UInt8
        var position: UInt64
    }

    private(set) var count = 0
    private var bytes: [UInt8] = []
    private var last = Cue(time: 0, track: 0, position: 0)

    /// Bytes the log holds (for tests that keep it compact).
    var storedBytes: Int { bytes.count }

    mutating func append(time: Int64, track: UInt8, position: UInt64) {
        precondition(position >= last.position, "cues are logged in file order")
        bytes.append(track)
        LogVarint.append(LogVarint.zigzag(time &- last.time), to: &bytes)
        LogVarint.append(position - last.position, to: &bytes)
        last = Cue(time: time, track: track, position: position)
        count += 1
    }

    /// Forgets the cues of clusters that start at or after `position`.
    mutating func removeAll(fromPosition position: UInt64) {
        var reader = Reader(bytes: bytes)
        var kept = (byteCount: 0, count: 0, last: Cue(time: 0, track: 0, position: 0))
        while let cue = reader.next(), cue.position < position {
            kept = (reader.offset, kept.count + 1, cue)
        }
        bytes.removeSubrange(kept.byteCount...)
        (count, last) = (kept.count, kept.last)
    }

    var entries: Entries { Entries(bytes: bytes) }

    struct Entries: Sequence {
        fileprivate let bytes: [UInt8]
        func makeIterator() -> Reader { Reader(bytes: bytes) }
    }

    struct Reader: IteratorProtocol {
        fileprivate let bytes: [UInt8]
        fileprivate(set) var offset = 0
        private var previous = Cue(time: 0, track: 0, position: 0)

        fileprivate init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func next() -> Cue? {
            guard offset < bytes.count else { return nil }
            let track = bytes[offset]
            offset += 1
            let time = previous.time &+ LogVarint.unzigzag(LogVarint.read(bytes, at: &offset))
            let position = previous.position + LogVarint.read(bytes, at: &offset)
            previous = Cue(time: time, track: track, position: position)
            return previous
        }
    }
}

/// Unsigned LEB128 of any 64-bit value, and zigzag, for logs the muxer writes and reads back itself (never input).
enum LogVarint {
    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    static func read(_ bytes: [UInt8], at offset: inout Int) -> UInt64 {
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

    static func zigzag(_ value: Int64) -> UInt64 { UInt64(bitPattern: (value << 1) ^ (value >> 63)) }
    static func unzigzag(_ value: UInt64) -> Int64 { Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1) }
}
