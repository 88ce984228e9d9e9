import WireCoding

/// RE-CONFIG result codes (RFC 6525 §4.4) recbot sends or reads.
enum ReconfigResult {
    static let performed: UInt32 = 1
    static let denied: UInt32 = 2
    static let inProgress: UInt32 = 6
}

/// Stream-reset bookkeeping (RFC 6525) for one association, both directions:
/// the peer's requests to reset its outgoing streams (performed once every TSN before
/// them has arrived; retransmitted requests get the same answer), and our own outgoing
/// resets, which follow the peer's so a data channel closes in both directions (RFC 8831
/// §6.7). At most one request of ours is in flight; it is retransmitted until answered.
struct StreamResets {
    struct Request: Equatable {
        var sequence: UInt32
        var streams: [UInt16]
        var lastTSN: UInt32
        var deadline: MonotonicTime
        var attempts: Int
    }

    /// A peer request waiting for data before `lastTSN` to arrive.
    struct Deferred: Equatable {
        var request: UInt32
        var lastTSN: UInt32
        var streams: [UInt16]
        var streamSet: Set<UInt16>

        init(request: UInt32, lastTSN: UInt32, streams: [UInt16]) {
            self.request = request
            self.lastTSN = lastTSN
            self.streams = streams
            streamSet = Set(streams)
        }
    }

    static let maximumDeferred = 16
    static let maximumStreamsPerRequest = 256
    static let maximumAttempts = 8

    private var nextRequestSequence: UInt32
    /// The latest request sequence number seen from the peer (our requests carry it).
    private(set) var lastPeerRequest: UInt32 = 0
    /// Answers already given, so a retransmitted request is not performed twice.
    private var answers: [UInt32: UInt32] = [:]
    private var answerOrder: [UInt32] = []
    private(set) var deferred: [Deferred] = []
    /// Our outgoing streams still to reset, in the order they were asked for.
    private var queued: [UInt16] = []
    private var queuedSet: Set<UInt16> = []  // membership for `queued`: a hostile peer can name thousands of streams
    private(set) var inFlight: Request?
    /// Streams we started closing; the peer's reset of them completes the close, not answered again.
    private var initiated: Set<UInt16> = []

    init(initialTSN: UInt32) {
        nextRequestSequence = initialTSN
    }

    mutating func peerStarted(initialTSN: UInt32) { lastPeerRequest = initialTSN &- 1 }

    func answer(to request: UInt32) -> UInt32? { answers[request] }

    mutating func record(answer result: UInt32, to request: UInt32) {
        lastPeerRequest = request
        deferred.removeAll { $0.request == request }  // performed now: not again when its data is complete
        guard answers[request] == nil else { return }
        answers[request] = result
        answerOrder.append(request)
        if answerOrder.count > 32 { answers[answerOrder.removeFirst()] = nil }
    }

    /// Defers a peer request; false when too many are already waiting.
    mutating func deferReset(_ request: Deferred) -> Bool {
        lastPeerRequest = request.request
        if deferred.contains(where: { $0.request == request.request }) { return true }
        guard deferred.count < Self.maximumDeferred else { return false }
        deferred.append(request)
        return true
    }

    /// DATA that must wait for a deferred reset of its stream: sent after the reset's last TSN.
    func isHeldBack(_ data: SCTPData) -> Bool {
        deferred.contains { $0.streamSet.contains(data.streamID) && isAfter(data.tsn, $0.lastTSN) }
    }

    /// Deferred requests whose data has all arrived (cumulative TSN reached), removed.
    mutating func takeReady(cumulativeTSN: UInt32) -> [Deferred] {
        let waiting = deferred
        deferred = waiting.filter { isAfter($0.lastTSN, cumulativeTSN) }
        return waiting.filter { !isAfter($0.lastTSN, cumulativeTSN) }
    }

    /// We close these streams (our side first).
    mutating func initiate(_ streams: [UInt16]) {
        initiated.formUnion(streams)
        queueOutgoing(streams)
    }

    /// The peer reset these: ours follow, except those whose close we started (already reset).
    mutating func follow(_ streams: [UInt16]) {
        queueOutgoing(streams.filter { initiated.remove($0) == nil })
    }

    private mutating func queueOutgoing(_ streams: [UInt16]) {
        let inFlightStreams = Set(inFlight?.streams ?? [])
        for stream in streams where !queuedSet.contains(stream) && !inFlightStreams.contains(stream) {
            queued.append(stream)
            queuedSet.insert(stream)
        }
    }

    /// The next request of ours, when none is in flight and streams are waiting.
    mutating func nextRequest(lastAssignedTSN: UInt32, now: MonotonicTime, timeoutMilliseconds: Int64) -> Request? {
        guard inFlight == nil, !queued.isEmpty else { return nil }
        let streams = Array(queued.prefix(Self.maximumStreamsPerRequest))
        queued.removeFirst(streams.count)
        queuedSet.subtract(streams)
        let request = Request(sequence: nextRequestSequence, streams: streams, lastTSN: lastAssignedTSN,
                              deadline: now.adding(milliseconds: timeoutMilliseconds), attempts: 1)
        nextRequestSequence &+= 1
        inFlight = request
        return request
    }

    /// The peer answered; true when our request is settled (anything but "in progress").
    mutating func received(response sequence: UInt32, result: UInt32) -> Bool {
        guard let request = inFlight, request.sequence == sequence, result != ReconfigResult.inProgress else { return false }
        inFlight = nil
        return true
    }

    /// The in-flight request is due again: returned with its new deadline, or nil when given up.
    mutating func retransmit(now: MonotonicTime, timeoutMilliseconds: Int64) -> Request? {
        guard var request = inFlight else { return nil }
        guard request.attempts < Self.maximumAttempts else {
            inFlight = nil
            return nil
        }
        request.attempts += 1
        request.deadline = now.adding(milliseconds: timeoutMilliseconds << min(request.attempts - 1, 5))
        inFlight = request
        return request
    }
}
