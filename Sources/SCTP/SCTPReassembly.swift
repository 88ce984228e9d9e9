/// The receive side of an association above TSN bookkeeping: fragments become messages,
/// ordered messages are delivered in stream-sequence order, abandoned and reset streams
/// are released. Sans-IO and bounded for a hostile peer:
/// - one message at most `maximumMessageSize` bytes (over it, the message is dropped and
///   the stream goes on without it);
/// - everything held (fragments, and complete ordered messages waiting for an earlier one)
///   at most `maximumBufferedBytes` and `maximumBufferedChunks`.
///
/// Fragments of one message carry consecutive TSNs (RFC 9260 §6.9), so each arriving
/// fragment is merged with the runs of consecutive TSNs ending just before it and starting
/// just after it: constant work per fragment, however many are held. (Scanning a stream's
/// fragments per arrival was quadratic: 16 000 one-byte fragments took 77 s.) A run whose
/// neighbouring TSN has arrived without continuing it can never complete and is released
/// at once, so nothing is held that cannot become a message.
struct SCTPReassembly {
    struct Limits {
        var maximumMessageSize: Int
        var maximumBufferedBytes: Int
        var maximumBufferedChunks: Int
    }

    /// What one input produced.
    struct Result {
        var messages: [SCTPMessage] = []
        /// Messages dropped: over a limit, incomplete for good, stale, or given up on while waiting.
        var dropped = 0
    }

    /// A run of fragments with consecutive TSNs, all of one stream, one ordering, and (when
    /// ordered) one stream sequence number.
    private struct Run {
        var start: UInt32
        var end: UInt32
        var bytes: Int
    }

    let limits: Limits
    private var fragments: [UInt32: SCTPData] = [:]
    private var runs: [UInt32: Run] = [:]  // by start TSN
    private var runStartByEnd: [UInt32: UInt32] = [:]
    private var fragmentBytes = 0
    private var expectedSequence: [UInt16: UInt16] = [:]
    /// Complete ordered messages ahead of the expected sequence; nil marks a dropped one.
    private var waiting: [UInt16: [UInt16: SCTPMessage?]] = [:]
    private var waitingBytes = 0
    private var waitingCount = 0

    init(limits: Limits) {
        self.limits = limits
    }

    /// Bytes held; the receive window advertised in SACKs shrinks by this much.
    var bufferedBytes: Int { fragmentBytes + waitingBytes }

    /// Streams with any state, for a reset that names no streams (meaning all of them).
    var knownStreams: Set<UInt16> {
        Set(expectedSequence.keys).union(waiting.keys).union(fragments.values.map(\.streamID))
    }

    // MARK: - Input

    /// A new DATA chunk. `isReceived` tells whether a TSN has arrived (or been skipped by
    /// FORWARD-TSN) already; the association filters duplicates before calling this.
    mutating func add(_ data: SCTPData, isReceived: (UInt32) -> Bool) -> Result {
        var result = Result()
        guard fragments[data.tsn] == nil else { return result }  // a TSN reused after wrapping: ignored
        if data.beginning && data.ending {
            complete([data], bytes: data.userData.count, &result)
        } else {
            assemble(data, isReceived: isReceived, &result)
        }
        releaseOrphans(around: data.tsn, &result)
        return result
    }

    private mutating func assemble(_ data: SCTPData, isReceived: (UInt32) -> Bool, _ result: inout Result) {
        var run = Run(start: data.tsn, end: data.tsn, bytes: data.userData.count)
        fragments[data.tsn] = data
        fragmentBytes += data.userData.count
        if !data.beginning, let leftStart = runStartByEnd[data.tsn &- 1], let left = runs[leftStart],
           let neighbour = fragments[left.end], continues(neighbour, with: data) {
            unlink(left)
            run = Run(start: left.start, end: data.tsn, bytes: left.bytes + run.bytes)
        }
        if !data.ending, let right = runs[data.tsn &+ 1], let neighbour = fragments[right.start], continues(data, with: neighbour) {
            unlink(right)
            run = Run(start: run.start, end: right.end, bytes: run.bytes + right.bytes)
        }
        link(run)
        guard let first = fragments[run.start], let last = fragments[run.end] else { return }
        let cannotStart = !first.beginning && isReceived(run.start &- 1)
        let cannotEnd = !last.ending && isReceived(run.end &+ 1)
        if cannotStart || cannotEnd || run.bytes > limits.maximumMessageSize || bufferedBytes > limits.maximumBufferedBytes
            || fragments.count > limits.maximumBufferedChunks {
            // Part of it was lost to a limit (or never sent), it is too large, or the peer
            // ignores our window: this message goes, and the stream goes on without it.
            drop(run, &result)
        } else if first.beginning && last.ending {
            let chunks = tsns(of: run).compactMap { fragments[$0] }
            remove(run)
            complete(chunks, bytes: run.bytes, &result)
        }
    }

    /// FORWARD-TSN (RFC 3758): the peer abandoned everything up to `cumulativeTSN`; ordered
    /// streams skip to just past the sequence numbers given.
    mutating func forward(cumulativeTSN: UInt32, streams: [(stream: UInt16, sequence: UInt16)]) -> Result {
        var result = Result()
        // A run missing a TSN at or below the new cumulative TSN will never be completed.
        for run in Array(runs.values) {
            guard let first = fragments[run.start], let last = fragments[run.end] else { continue }
            if (!first.beginning && !isAfter(run.start &- 1, cumulativeTSN)) || (!last.ending && !isAfter(run.end &+ 1, cumulativeTSN)) {
                remove(run)
            }
        }
        var skipped: [UInt16: UInt16] = [:]
        for (stream, sequence) in streams where skipped[stream].map({ isAfter(sequence, $0) }) ?? true { skipped[stream] = sequence }
        for (stream, sequence) in skipped where isAfter(sequence &+ 1, expectedSequence[stream, default: 0]) {
            expectedSequence[stream] = sequence &+ 1
            result.dropped += dropWaiting(behind: sequence &+ 1, stream: stream)
            drain(stream: stream, &result)
        }
        return result
    }

    /// The peer reset these streams: their sequence numbers start again at 0.
    mutating func reset(streams: [UInt16]) {
        let named = Set(streams)
        for run in Array(runs.values) where fragments[run.start].map({ named.contains($0.streamID) }) ?? false { remove(run) }
        for stream in named {
            expectedSequence[stream] = nil
            if let held = waiting.removeValue(forKey: stream) { forget(held) }
        }
    }

    // MARK: - Runs

    private func continues(_ earlier: SCTPData, with later: SCTPData) -> Bool {
        !earlier.ending && !later.beginning && earlier.streamID == later.streamID && earlier.unordered == later.unordered
            && (earlier.unordered || earlier.streamSequence == later.streamSequence)
    }

    private func tsns(of run: Run) -> [UInt32] {
        var result: [UInt32] = []
        var tsn = run.start
        while true {
            result.append(tsn)
            if tsn == run.end { return result }
            tsn &+= 1
        }
    }

    private mutating func link(_ run: Run) {
        runs[run.start] = run
        runStartByEnd[run.end] = run.start
    }

    private mutating func unlink(_ run: Run) {
        runs[run.start] = nil
        runStartByEnd[run.end] = nil
    }

    /// A run next to a TSN that has now arrived without continuing it can never become a
    /// message: released.
    private mutating func releaseOrphans(around tsn: UInt32, _ result: inout Result) {
        if let right = runs[tsn &+ 1], let first = fragments[right.start], !first.beginning {
            drop(right, &result)
        }
        if let leftStart = runStartByEnd[tsn &- 1], let left = runs[leftStart], let last = fragments[left.end], !last.ending {
            drop(left, &result)
        }
    }

    /// Gives up on the message `run` belongs to; an ordered stream then moves past it.
    private mutating func drop(_ run: Run, _ result: inout Result) {
        guard let first = fragments[run.start] else { return }
        remove(run)
        if first.beginning { result.dropped += 1 }  // a message; pieces of one already dropped are not counted again
        if !first.unordered { settle(stream: first.streamID, sequence: first.streamSequence, message: nil, &result) }
    }

    private mutating func remove(_ run: Run) {
        for tsn in tsns(of: run) {
            if let fragment = fragments.removeValue(forKey: tsn) { fragmentBytes -= fragment.userData.count }
        }
        unlink(run)
    }

    // MARK: - Messages

    private mutating func complete(_ chunks: [SCTPData], bytes: Int, _ result: inout Result) {
        guard let first = chunks.first else { return }
        var message: SCTPMessage?
        if bytes <= limits.maximumMessageSize {
            var data: [UInt8]
            if chunks.count == 1 {
                data = first.userData  // the common single-chunk message: no copy
            } else {
                data = []
                data.reserveCapacity(bytes)
                for chunk in chunks { data += chunk.userData }
            }
            message = SCTPMessage(streamID: first.streamID, payloadProtocol: first.payloadProtocol, unordered: first.unordered, data: data)
        } else {
            result.dropped += 1
        }
        if first.unordered {
            if let message { result.messages.append(message) }
        } else {
            settle(stream: first.streamID, sequence: first.streamSequence, message: message, &result)
        }
    }

    /// An ordered message (or a dropped one's place) is complete: deliver in sequence order.
    private mutating func settle(stream: UInt16, sequence: UInt16, message: SCTPMessage?, _ result: inout Result) {
        let expected = expectedSequence[stream, default: 0]
        guard sequence == expected || isAfter(sequence, expected) else {
            if message != nil { result.dropped += 1 }  // already delivered or skipped past
            return
        }
        var held = waiting.removeValue(forKey: stream) ?? [:]  // taken out, so it is changed in place
        if held[sequence] == nil {
            held[sequence] = .some(message)
            waitingCount += 1
            waitingBytes += message?.data.count ?? 0
        }
        waiting[stream] = held
        drain(stream: stream, &result)
        if let backlog = waiting[stream], bufferedBytes > limits.maximumBufferedBytes || waitingCount > limits.maximumBufferedChunks {
            // A gap that never fills while the peer keeps sending: give up on this stream's
            // backlog and go on after it (what is still missing arrives stale and is dropped).
            waiting[stream] = nil
            forget(backlog)
            result.dropped += backlog.values.filter { $0 != nil }.count
            let last = backlog.keys.reduce(expected) { isAfter($1, $0) ? $1 : $0 }
            expectedSequence[stream] = last &+ 1
        }
    }

    private mutating func drain(stream: UInt16, _ result: inout Result) {
        guard var held = waiting.removeValue(forKey: stream) else { return }
        var expected = expectedSequence[stream, default: 0]
        while let ready = held.removeValue(forKey: expected) {
            waitingCount -= 1
            if let message = ready {
                waitingBytes -= message.data.count
                result.messages.append(message)
            }
            expected &+= 1
        }
        expectedSequence[stream] = expected
        if !held.isEmpty { waiting[stream] = held }
    }

    /// Messages waiting behind a sequence number FORWARD-TSN skipped to will never be due.
    private mutating func dropWaiting(behind expected: UInt16, stream: UInt16) -> Int {
        guard let held = waiting.removeValue(forKey: stream) else { return 0 }
        let stale = held.filter { !($0.key == expected || isAfter($0.key, expected)) }
        forget(stale)
        let kept = held.filter { $0.key == expected || isAfter($0.key, expected) }
        if !kept.isEmpty { waiting[stream] = kept }
        return stale.values.filter { $0 != nil }.count
    }

    private mutating func forget(_ held: [UInt16: SCTPMessage?]) {
        waitingCount -= held.count
        waitingBytes -= held.values.reduce(0) { $0 + ($1?.data.count ?? 0) }
    }
}
