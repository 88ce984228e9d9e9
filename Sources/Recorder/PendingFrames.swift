import Media
import WebM
import WireCoding

/// One sender's frames between their arrival and the muxer. They are kept in media-time order,
/// one picture per capture instant, and go out in that order once the other track had time to
/// catch up (so a file's blocks interleave) and a keyframe had a moment to be replaced.
struct PendingFrames {
    struct Entry {
        var frame: WebMFrame
        var arrival: MonotonicTime
        var source: FrameSource
        /// The sender's video orientation tag (clockwise quarter turns), when it sends one.
        var quarterTurns: UInt8?
    }

    /// The frames waiting, in media-time order. Released frames leave from the front, so the
    /// storage keeps a head index and compacts now and then: removing them from an array's
    /// front moved every waiting frame (70 of them while video is paused) for each one released.
    var entries: ArraySlice<Entry> { storage[head...] }
    private var storage: [Entry] = []
    private var head = 0
    /// The video frames among `entries` (kept as they change: counting them at every release
    /// was a scan of every waiting frame per frame, and audio waits 1.4 s while video is paused).
    private var videoCount = 0

    /// How long a frame waits for the other track before it goes out anyway.
    let interleaveNanoseconds: Int64

    init(interleaveNanoseconds: Int64) { self.interleaveNanoseconds = interleaveNanoseconds }

    /// How long a video keyframe waits, for a layer switch's second one.
    static let keyframeSettleNanoseconds: Int64 = 150_000_000
    /// Two keyframes closer than this are one instant's pictures (no sender runs at 200 fps).
    static let sameInstantNanoseconds: Int64 = 5_000_000

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// Adds a frame at its media time's place; false when it was left out as another picture
    /// of an instant already waiting (a layer switch forwards both layers' pictures of it: the
    /// new layer's keyframe takes the old one's place, a delta frame cannot and goes).
    mutating func insert(_ entry: Entry) -> Bool {
        let frame = entry.frame
        // On the storage itself: going through `entries` made a slice (and a retain) per step.
        var index = storage.endIndex
        // Frames arrive nearly in order, so the scan is short.
        while index > head, storage[index - 1].frame.timestampNanoseconds > frame.timestampNanoseconds { index -= 1 }
        if frame.track == .video, let same = sameInstant(as: frame, before: index) {
            guard frame.isKeyframe else { return false }
            storage.remove(at: same)
            videoCount -= 1
            _ = insert(entry)  // at its own time's place (it may be 1 ms later)
            return false
        }
        storage.insert(entry, at: index)
        if frame.track == .video { videoCount += 1 }
        return true
    }

    /// The last waiting video picture before `index` of `frame`'s instant. Frames wait in time
    /// order, so the scan stops at the first one a whole instant older (it used to visit every
    /// waiting frame, 70 of them while video is paused, for each picture).
    private func sameInstant(as frame: WebMFrame, before index: Int) -> Int? {
        var probe = index
        while probe > head {
            probe -= 1
            let waiting = storage[probe].frame
            if frame.timestampNanoseconds - waiting.timestampNanoseconds >= Self.sameInstantNanoseconds { return nil }
            if waiting.track == .video && Self.isSameInstant(waiting, frame) { return probe }
        }
        return nil
    }

    /// One capture instant: the same time, or two keyframes closer than any frame interval
    /// (Janus moves the new layer's timestamps 1 ms past the old layer's on a switch).
    private static func isSameInstant(_ waiting: WebMFrame, _ new: WebMFrame) -> Bool {
        let distance = new.timestampNanoseconds - waiting.timestampNanoseconds
        if distance == 0 { return true }
        return waiting.isKeyframe && new.isKeyframe && distance > 0 && distance < sameInstantNanoseconds
    }

    /// Drops every video frame (the video track changes codec before the file starts); how many.
    mutating func removeVideo() -> Int {
        let before = entries.count
        compact()
        storage.removeAll { $0.frame.track == .video }
        videoCount = 0
        return before - entries.count
    }

    /// How many frames from the front may go out now (`force`: all of them).
    func releasable(now: MonotonicTime, force: Bool, bothTracks: Bool) -> Int {
        guard !force else { return entries.count }
        var video = videoCount
        var audio = entries.count - video
        var released = 0
        for entry in entries {
            let isVideo = entry.frame.track == .video
            let waited = now.nanoseconds - entry.arrival.nanoseconds
            let otherTrackAhead = isVideo ? audio > 0 : video > 0
            guard !bothTracks || otherTrackAhead || waited >= interleaveNanoseconds else { break }
            // A keyframe waits a moment for another picture of its instant (see `insert`).
            guard !isVideo || !entry.frame.isKeyframe || waited >= Self.keyframeSettleNanoseconds else { break }
            released += 1
            if isVideo { video -= 1 } else { audio -= 1 }
        }
        return released
    }

    mutating func removeFirst(_ count: Int) {
        guard count > 0 else { return }
        let end = head + count
        for index in head..<end {
            if storage[index].frame.track == .video { videoCount -= 1 }
            storage[index].frame.data = []  // the payload is freed now, not at the next compaction
        }
        head = end
        if head >= 64 && head * 2 >= storage.count { compact() }
    }

    private mutating func compact() {
        storage.removeFirst(head)
        head = 0
    }
}
