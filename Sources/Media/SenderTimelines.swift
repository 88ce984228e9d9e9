import WireCoding

/// Every sender's timeline in a session, and the books of their SR holds: which senders hold
/// frames (their deadlines are timers) and how many bytes all of them hold together.
struct SenderTimelines {
    /// Timelines in an array, found through a map of sender ids to places: a dictionary's
    /// in-place change runs a coroutine that allocated for every frame; an array's does not.
    /// Each keeps its sender's id, so the one moved into a freed place is found at once.
    private var timelines: [(sender: String, timeline: SenderTimeline)] = []
    private var places: [String: Int] = [:]
    private var holding: Set<String> = []
    /// Bytes all senders hold for SRs.
    private(set) var heldBytes = 0
    let maximumHold: Int64
    /// What the timelines of senders that left did, so the totals only grow.
    private var forgottenCounters = SyncCounters()

    init(maximumHold: Int64) { self.maximumHold = maximumHold }

    /// What keeping every sender's timeline did, added to `base`.
    func counters(adding base: SyncCounters) -> SyncCounters {
        timelines.reduce(base + forgottenCounters) { $0 + $1.timeline.counters }
    }

    /// Senders with a timeline.
    var senders: Dictionary<String, Int>.Keys { places.keys }

    /// Drops the timeline of a sender that left (its counters stay in the totals); one still
    /// holding frames is kept until they are released.
    mutating func forget(_ sender: String) {
        guard let place = places[sender], timelines[place].timeline.heldBytes == 0, timelines[place].timeline.nextDeadline == nil else { return }
        forgottenCounters = forgottenCounters + timelines[place].timeline.counters
        // The last timeline takes the freed place.
        timelines.swapAt(place, timelines.count - 1)
        timelines.removeLast()
        if place < timelines.count { places[timelines[place].sender] = place }
        places[sender] = nil
        holding.remove(sender)
    }

    /// The earliest hold deadline.
    var nextDeadline: MonotonicTime? {
        var earliest: MonotonicTime?
        for sender in holding {
            guard let place = places[sender], let hold = timelines[place].timeline.nextDeadline else { continue }
            earliest = min(earliest ?? hold, hold)
        }
        return earliest
    }

    /// Runs `body` on the sender's timeline in place (one hash of the sender's id: this runs for
    /// every frame), keeping the books when the hold changes.
    mutating func with<Result>(_ sender: String, _ body: (inout SenderTimeline) -> Result) -> Result {
        let place: Int
        if let known = places[sender] {
            place = known
        } else {
            place = timelines.count
            timelines.append((sender, SenderTimeline(maximumHold: maximumHold)))
            places[sender] = place
        }
        var change = HoldChange()
        let result = change.observe(&timelines[place].timeline, body)
        heldBytes += change.bytes
        if change.startedHolding { holding.insert(sender) }
        if change.stoppedHolding { holding.remove(sender) }
        return result
    }

    /// Runs `body` on every sender that holds frames.
    mutating func withEachHolding(_ body: (inout SenderTimeline) -> Void) {
        for sender in holding { with(sender, body) }
    }
}

/// What one call did to a timeline's hold.
private struct HoldChange {
    var bytes = 0
    var startedHolding = false
    var stoppedHolding = false

    mutating func observe<Result>(_ timeline: inout SenderTimeline, _ body: (inout SenderTimeline) -> Result) -> Result {
        let (bytesBefore, wasHolding) = (timeline.heldBytes, timeline.nextDeadline != nil)
        let result = body(&timeline)
        let isHolding = timeline.nextDeadline != nil
        (bytes, startedHolding, stoppedHolding) = (timeline.heldBytes - bytesBefore, isHolding && !wasHolding, wasHolding && !isHolding)
        return result
    }
}
