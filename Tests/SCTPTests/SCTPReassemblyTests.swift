import Testing
import WireCoding
@testable import SCTP

/// Feeds a reassembly the way the association does: it knows which TSNs have arrived.
struct Feeder {
    var reassembly: SCTPReassembly
    private var received: Set<UInt32> = []
    private var forwardedTo: UInt32?

    init(_ limits: SCTPReassembly.Limits) { reassembly = SCTPReassembly(limits: limits) }

    mutating func add(_ data: SCTPData) -> SCTPReassembly.Result {
        received.insert(data.tsn)
        let (received, forwardedTo) = (self.received, self.forwardedTo)
        return reassembly.add(data) { tsn in
            received.contains(tsn) || forwardedTo.map { let distance = $0 &- tsn; return distance <= UInt32.max / 2 } ?? false
        }
    }

    mutating func forward(cumulativeTSN: UInt32, streams: [(stream: UInt16, sequence: UInt16)]) -> SCTPReassembly.Result {
        forwardedTo = cumulativeTSN
        return reassembly.forward(cumulativeTSN: cumulativeTSN, streams: streams)
    }

    var bufferedBytes: Int { reassembly.bufferedBytes }
}

@Suite struct SCTPReassemblyTests {
    static let roomy = SCTPReassembly.Limits(maximumMessageSize: 1 << 20, maximumBufferedBytes: 1 << 22, maximumBufferedChunks: 1 << 16)

    /// A message cut into fragments of `size` bytes with consecutive TSNs from `tsn`.
    static func fragments(_ data: [UInt8], tsn: UInt32, stream: UInt16, sequence: UInt16, unordered: Bool = false, size: Int = 3) -> [SCTPData] {
        var result: [SCTPData] = []
        var offset = 0
        repeat {
            let end = min(data.count, offset + size)
            result.append(SCTPData(tsn: tsn &+ UInt32(result.count), streamID: stream, streamSequence: sequence, payloadProtocol: 53,
                                   unordered: unordered, beginning: offset == 0, ending: end == data.count, userData: Array(data[offset..<end])))
            offset = end
        } while offset < data.count
        return result
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8])
    func anyArrivalOrderGivesTheSameMessages(seed: UInt64) {
        let random = seeded(seed)
        // 40 messages on 3 streams, ordered and unordered, 1 to 40 bytes, TSNs across the wrap.
        var chunks: [SCTPData] = []
        var sent: [(stream: UInt16, unordered: Bool, data: [UInt8])] = []
        var sequences: [UInt16: UInt16] = [0: UInt16.max - 5, 1: 0, 2: 7]
        var tsn = UInt32.max - 30
        var reassembly = Feeder(Self.roomy)
        for index in 0..<40 {
            let stream = UInt16(random() % 3)
            let unordered = stream == 2 && random() % 2 == 0
            let data = (0..<(1 + Int(random() % 40))).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            let sequence = unordered ? 0 : sequences[stream]!
            if !unordered { sequences[stream]! &+= 1 }
            let pieces = Self.fragments(data, tsn: tsn, stream: stream, sequence: sequence, unordered: unordered)
            chunks += pieces
            tsn &+= UInt32(pieces.count)
            sent.append((stream, unordered, data))
        }
        // Expected sequence numbers start where the streams do (FORWARD-TSN moves them, in
        // serial-number steps of less than half the space).
        let before = UInt32.max - 31  // the TSN just before the first one sent
        for step: UInt16 in [20_000, 40_000, UInt16.max - 6] { _ = reassembly.forward(cumulativeTSN: before, streams: [(0, step)]) }
        _ = reassembly.forward(cumulativeTSN: before, streams: [(2, 6)])
        for index in chunks.indices.reversed() {  // Fisher–Yates with the seeded generator
            chunks.swapAt(index, Int(random() % UInt64(index + 1)))
        }
        var delivered: [SCTPMessage] = []
        for chunk in chunks { delivered += reassembly.add(chunk).messages }

        #expect(delivered.count == sent.count)
        for stream in UInt16(0)...2 {
            let orderedSent = sent.filter { $0.stream == stream && !$0.unordered }.map(\.data)
            #expect(delivered.filter { $0.streamID == stream && !$0.unordered }.map(\.data) == orderedSent, "stream \(stream) in order")
        }
        #expect(Set(delivered.filter(\.unordered).map(\.data)) == Set(sent.filter(\.unordered).map(\.data)))
        #expect(reassembly.bufferedBytes == 0, "nothing left behind")
    }

    @Test func aFragmentThatCannotContinueItsNeighbourReleasesIt() {
        var reassembly = Feeder(Self.roomy)
        // TSN 11 is the middle of a message on stream 1 whose start (10) is then taken by
        // a complete message of stream 2: the orphan goes, and stream 1 moves past it.
        #expect(reassembly.add(SCTPData(tsn: 11, streamID: 1, streamSequence: 0, payloadProtocol: 51, beginning: false, ending: false, userData: [1])).messages.isEmpty)
        let result = reassembly.add(SCTPData(tsn: 10, streamID: 2, streamSequence: 0, payloadProtocol: 51, userData: [2]))
        // Released, though not counted as a message: a piece without its beginning may belong
        // to one already dropped and counted.
        #expect(result.messages.map(\.data) == [[2]] && result.dropped == 0)
        #expect(reassembly.bufferedBytes == 0)
        let next = reassembly.add(SCTPData(tsn: 13, streamID: 1, streamSequence: 1, payloadProtocol: 51, userData: [3]))
        #expect(next.messages.map(\.data) == [[3]], "sequence 0 was given up, so 1 is due")
    }

    @Test func heldDataIsBoundedWhateverThePeerSends() {
        let limits = SCTPReassembly.Limits(maximumMessageSize: 1_000, maximumBufferedBytes: 5_000, maximumBufferedChunks: 64)
        var reassembly = Feeder(limits)
        var dropped = 0
        var tsn: UInt32 = 0
        // Incomplete messages on many streams (never an ending), and ordered messages
        // behind a gap that never fills: held data stays within the limits.
        for stream in UInt16(0)..<200 {
            for piece in 0..<3 {
                dropped += reassembly.add(SCTPData(tsn: tsn, streamID: stream, streamSequence: 0, payloadProtocol: 53,
                                                   beginning: piece == 0, ending: false, userData: [UInt8](repeating: 1, count: 200))).dropped
                tsn += 1
                #expect(reassembly.bufferedBytes <= limits.maximumBufferedBytes + 200)
            }
            tsn += 1
        }
        for sequence in UInt16(1)..<300 {
            dropped += reassembly.add(SCTPData(tsn: tsn, streamID: 500, streamSequence: sequence, payloadProtocol: 53, userData: [UInt8](repeating: 2, count: 100))).dropped
            tsn += 1
            #expect(reassembly.bufferedBytes <= limits.maximumBufferedBytes + 200)
        }
        #expect(dropped > 0)
    }

    @Test func forwardTSNReleasesAbandonedFragmentsAndWaitingMessages() {
        var reassembly = Feeder(Self.roomy)
        // Stream 1: sequence 0 half there, 1 and 2 complete and waiting; unordered half message on stream 3.
        _ = reassembly.add(SCTPData(tsn: 1, streamID: 1, streamSequence: 0, payloadProtocol: 51, beginning: true, ending: false, userData: [0]))
        _ = reassembly.add(SCTPData(tsn: 3, streamID: 1, streamSequence: 1, payloadProtocol: 51, userData: [1]))
        _ = reassembly.add(SCTPData(tsn: 4, streamID: 3, streamSequence: 0, payloadProtocol: 51, unordered: true, beginning: true, ending: false, userData: [9]))
        _ = reassembly.add(SCTPData(tsn: 6, streamID: 1, streamSequence: 2, payloadProtocol: 51, userData: [2]))
        #expect(reassembly.bufferedBytes == 4)
        // The peer abandons sequence 0 (TSNs 1–2) and the unordered message (4–5).
        let result = reassembly.forward(cumulativeTSN: 5, streams: [(1, 0)])
        #expect(result.messages.map(\.data) == [[1], [2]], "the waiting messages are now due")
        #expect(reassembly.bufferedBytes == 0)
        // Skipping past waiting messages drops them.
        _ = reassembly.add(SCTPData(tsn: 8, streamID: 1, streamSequence: 4, payloadProtocol: 51, userData: [4]))
        #expect(reassembly.forward(cumulativeTSN: 9, streams: [(1, 5)]).messages.isEmpty)
        #expect(reassembly.bufferedBytes == 0)
        #expect(reassembly.add(SCTPData(tsn: 10, streamID: 1, streamSequence: 6, payloadProtocol: 51, userData: [6])).messages.map(\.data) == [[6]])
    }

    @Test func theAdvertisedWindowShrinksWhileDataIsHeld() throws {
        let (association, tag, tsn) = SCTPPeerBehaviourTests().established()
        let chunk: SCTPChunk = .data(SCTPData(tsn: tsn, streamID: 1, streamSequence: 0, payloadProtocol: 53, beginning: true, ending: false,
                                               userData: [UInt8](repeating: 7, count: 1_000)))
        let output = association.handle(packet: SCTPPeerBehaviourTests().packet(tag, [chunk]), now: .milliseconds(2))
        guard case .selectiveAck(let sack) = try SCTPPacket(parsing: try #require(output.packets.first)).chunks.first else {
            Issue.record("no SACK")
            return
        }
        #expect(sack.advertisedReceiverWindow == (1 << 20) - 1_000)
    }
}

/// Cases found in review: each once led to held data that could never leave, or to a stuck stream.
@Suite struct SCTPReassemblyReviewCases {
    @Test func aMiddlePieceAfterACompleteMessageIsNotHeld() {
        var feeder = Feeder(SCTPReassemblyTests.roomy)
        #expect(feeder.add(SCTPData(tsn: 5, streamID: 1, streamSequence: 0, payloadProtocol: 51, userData: [1])).messages.count == 1)
        _ = feeder.add(SCTPData(tsn: 6, streamID: 1, streamSequence: 1, payloadProtocol: 51, beginning: false, ending: false, userData: [2, 2]))
        #expect(feeder.bufferedBytes == 0, "TSN 5 already arrived, so this piece can never get a beginning")
    }

    @Test func anOversizedMessageWhoseEndComesFirstLeavesNothingBehind() {
        let limits = SCTPReassembly.Limits(maximumMessageSize: 10, maximumBufferedBytes: 1_000, maximumBufferedChunks: 100)
        var feeder = Feeder(limits)
        var dropped = 0
        // SSN 0 in 4-byte pieces at TSNs 1…5 (20 bytes, over the limit); the end arrives first.
        for tsn: UInt32 in [5, 1, 2, 3, 4] {
            dropped += feeder.add(SCTPData(tsn: tsn, streamID: 1, streamSequence: 0, payloadProtocol: 53, beginning: tsn == 1, ending: tsn == 5,
                                           userData: [UInt8](repeating: 9, count: 4))).dropped
        }
        #expect(dropped == 1 && feeder.bufferedBytes == 0)
        #expect(feeder.add(SCTPData(tsn: 6, streamID: 1, streamSequence: 1, payloadProtocol: 53, userData: [1])).messages.count == 1,
                "the stream goes on")
        // The same SSN coming round again is a new message, not the discarded one.
        var sequence: UInt16 = 2
        var tsn: UInt32 = 7
        var delivered = 0
        while sequence != 1 {
            delivered += feeder.add(SCTPData(tsn: tsn, streamID: 1, streamSequence: sequence, payloadProtocol: 53, userData: [2])).messages.count
            sequence &+= 1
            tsn += 1
        }
        #expect(delivered == 65_535 && feeder.bufferedBytes == 0)
    }

    @Test func givingUpABacklogMovesTheStreamOn() {
        let limits = SCTPReassembly.Limits(maximumMessageSize: 100, maximumBufferedBytes: 1_000, maximumBufferedChunks: 10)
        var feeder = Feeder(limits)
        // SSN 0 never comes; 1…11 pile up until the backlog is given up.
        var dropped = 0
        for sequence in UInt16(1)...11 {
            dropped += feeder.add(SCTPData(tsn: UInt32(sequence), streamID: 1, streamSequence: sequence, payloadProtocol: 53, userData: [1])).dropped
        }
        #expect(dropped == 11 && feeder.bufferedBytes == 0)
        #expect(feeder.add(SCTPData(tsn: 20, streamID: 1, streamSequence: 12, payloadProtocol: 53, userData: [2])).messages.map(\.data) == [[2]])
        #expect(feeder.add(SCTPData(tsn: 21, streamID: 1, streamSequence: 0, payloadProtocol: 53, userData: [3])).dropped == 1, "arrives stale")
    }
}
