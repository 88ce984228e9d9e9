/// The receive side of an association above TSN bookkeeping: fragments become messages,
/// ordered messages are delivered in stream-sequence order, abandoned and reset streams
/// are released. Sans-IO and bounded for a hostile peer:
/// - one message at most `maximumMessageSize` bytes (over it, the message is dropped and
///   its later fragments discarded as they arrive, so the stream goes on);
/// - everything held (fragments, and complete ordered messages waiting for an earlier one)
///   at most `maximumBufferedBytes` and `maximumBufferedChunks`.
///
/// Fragments of one message carry consecutive TSNs (RFC 9260 §6.9), so each arriving
/// fragment is merged with the runs of consecutive TSNs ending just before it and starting
/// just after it: constant work per fragment, however many are held. (Scanning a stream's
/// fragments per arrival was quadratic: 16 000 one-byte fragments took 77 s.)
struct SCTPReassembly {
    struct Limits {
        var maximumMessageSize: Int
        var maximumBufferedBytes: Int
        var maximumBufferedChunks: Int
    }

    /// What one input produced.
    struct Result {
        var messages: [SCTPMessage] = []
        /// Messages dropped: over a limit, or waiting ordered messages given up on.
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
    /// A message being thrown away fragment by fragment, per stream.
    private var discarding: [UInt16: (ordered: Bool, sequence: UInt16)] = [:]

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

    /// A new DATA chunk (never a duplicate: the association filters those by TSN).
    mutating func add(_ data: SCTPData) -> Result {
        var result = Result()
        assemble(data, &result)
        releaseOrphans(around: data.tsn, &result)
        return result
    }

    private mutating func assemble(_ data: SCTPData, _ result: inout Result) {
        if let dropped = discarding[data.streamID], dropped.ordered == !data.unordered,
           data.unordered ? !data.beginning : dropped.sequence == data.streamSequence {
            if data.ending { discarding[data.streamID] = nil }
            return
        }
        if data.beginning && data.ending {
            complete([data], bytes: data.userData.count, &result)
            return
        }
        var run = Run(start: data.tsn, end: data.tsn, bytes: data.userData.count)
        fragments[data.tsn] = data
        fragmentBytes += data.userData.count
        if !data.beginning, let leftStart = runStartByEnd[data.tsn &- 1], let left = runs[leftStart],
           let neighbour = fragments[left.end], continues(neighbour, with: data) {
            runs[leftStart] = nil
            runStartByEnd[left.end] = nil
            run = Run(start: left.start, end: data.tsn, bytes: left.bytes + run.bytes)
        }
        if !data.ending, let right = runs[data.tsn &+ 1], let neighbour = fragments[right.start], continues(data, with: neighbour) {
            runs[right.start] = nil
            runStartByEnd[right.end] = nil
            run = Run(start: run.start, end: right.end, bytes: run.bytes + right.bytes)
        }
        guard let first = fragments[run.start], let last = fragments[run.end] else { return }
        if run.bytes > limits.maximumMessageSize || bufferedBytes > limits.maximumBufferedBytes
            || fragments.count > limits.maximumBufferedChunks {
            // Too large, or the peer ignores our window: this message goes, and so do its
            // fragments still to come.
            drop(run, &result)
            if !last.ending { discarding[first.streamID] = (!first.unordered, first.streamSequence) }
            return
        }
        if first.beginning && last.ending {
            let chunks = tsns(of: run).compactMap { fragments[$0] }
            remove(run)
            complete(chunks, bytes: run.bytes, &result)
        } else {
            runs[run.start] = run
            runStartByEnd[run.end] = run.start
        }
    }

    /// FORWARD-TSN (RFC 3758): messages up to `cumulativeTSN` were abandoned; ordered
    /// streams skip to just past the sequence numbers given.
    mutating func forward(cumulativeTSN: UInt32, streams: [(stream: UInt16, sequence: UInt16)]) -> Result {
        var result = Result()
        let skipped = Dictionary(streams.map { ($0.stream, $0.sequence) }, uniquingKeysWith: { first, second in isAfter(second, first) ? second : first })
        for run in runs.values {
            guard let first = fragments[run.start] else { continue }
            let abandoned = first.unordered
                ? !isAfter(run.start, cumulativeTSN)
                : skipped[first.streamID].map { !isAfter(first.streamSequence, $0) } ?? false
            if abandoned { remove(run) }
        }
        for (stream, sequence) in skipped {
            if let dropped = discarding[stream], dropped.ordered, !isAfter(dropped.sequence, sequence) { discarding[stream] = nil }
            let expected = expectedSequence[stream, default: 0]
            if isAfter(sequence &+ 1, expected) {
                expectedSequence[stream] = sequence &+ 1
                dropWaiting(behind: sequence &+ 1, stream: stream)
                drain(stream: stream, &result)
            }
        }
        return result
    }

    /// The peer reset these streams: their sequence numbers start again at 0.
    mutating func reset(streams: [UInt16]) {
        let named = Set(streams)
        for run in runs.values where fragments[run.start].map({ named.contains($0.streamID) }) ?? false { remove(run) }
        for stream in named {
            expectedSequence[stream] = nil
            discarding[stream] = nil
            if let held = waiting.removeValue(forKey: stream) { forget(held) }
        }
    }

    // MARK: - Internals

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

    /// A run next to a TSN that has now arrived without continuing it can never become a
    /// message (part of it was lost to a limit, or the peer is broken): released.
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
        result.dropped += 1
        if !first.unordered { settle(stream: first.streamID, sequence: first.streamSequence, message: nil, &result) }
    }

    private mutating func remove(_ run: Run) {
        for tsn in tsns(of: run) {
            if let fragment = fragments.removeValue(forKey: tsn) { fragmentBytes -= fragment.userData.count }
        }
        runs[run.start] = nil
        runStartByEnd[run.end] = nil
    }

    private mutating func complete(_ chunks: [SCTPData], bytes: Int, _ result: inout Result) {
        guard let first = chunks.first else { return }
        var message: SCTPMessage?
        if bytes <= limits.maximumMessageSize {
            var data: [UInt8] = []
            data.reserveCapacity(bytes)
            for chunk in chunks { data += chunk.userData }
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
        guard sequence == expected || isAfter(sequence, expected) else { return }  // stale: already delivered or skipped
        var held = waiting[stream, default: [:]]
        if held[sequence] == nil {
            held[sequence] = .some(message)
            waitingCount += 1
            waitingBytes += message?.data.count ?? 0
        }
        waiting[stream] = held
        drain(stream: stream, &result)
        if waitingBytes + fragmentBytes > limits.maximumBufferedBytes || waitingCount > limits.maximumBufferedChunks {
            // A gap that never fills while the peer keeps sending: give up on this stream's backlog.
            if let given = waiting.removeValue(forKey: stream) {
                result.dropped += given.count
                forget(given)
            }
        }
    }

    private mutating func drain(stream: UInt16, _ result: inout Result) {
        guard var held = waiting[stream] else { return }
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
        waiting[stream] = held.isEmpty ? nil : held
    }

    /// Messages waiting behind a sequence number FORWARD-TSN skipped to will never be due.
    private mutating func dropWaiting(behind expected: UInt16, stream: UInt16) {
        guard let held = waiting[stream] else { return }
        let stale = held.filter { !($0.key == expected || isAfter($0.key, expected)) }
        guard !stale.isEmpty else { return }
        forget(stale)
        let kept = held.filter { $0.key == expected || isAfter($0.key, expected) }
        waiting[stream] = kept.isEmpty ? nil : kept
    }

    private mutating func forget(_ held: [UInt16: SCTPMessage?]) {
        waitingCount -= held.count
        waitingBytes -= held.values.reduce(0) { $0 + ($1?.data.count ?? 0) }
    }

    /// Serial-number order (RFC 1982) for TSNs and stream sequence numbers.
    private func isAfter(_ value: UInt32, _ reference: UInt32) -> Bool {
        let distance = value &- reference
        return distance != 0 && distance < UInt32.max / 2
    }

    private func isAfter(_ value: UInt16, _ reference: UInt16) -> Bool {
        let distance = value &- reference
        return distance != 0 && distance < UInt16.max / 2
    }
}
