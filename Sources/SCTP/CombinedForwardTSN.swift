/// Every FORWARD-TSN chunk of one packet folded into one (RFC 3758): the furthest cumulative TSN,
/// and per stream the furthest sequence number skipped, so a packet repeating or reordering
/// them moves the receiver once.
struct CombinedForwardTSN {
    var tsn: UInt32
    var streams: [(stream: UInt16, sequence: UInt16)]
    var applied = false

    init?(_ chunks: [SCTPChunk]) {
        var furthest: UInt32?
        var sequences: [UInt16: UInt16] = [:]
        for case .forwardTSN(let tsn, let streams) in chunks {
            if furthest.map({ isAfter(tsn, $0) }) ?? true { furthest = tsn }
            for (stream, sequence) in streams where sequences[stream].map({ isAfter(sequence, $0) }) ?? true {
                sequences[stream] = sequence
            }
        }
        guard let furthest else { return nil }
        tsn = furthest
        streams = sequences.map { (stream: $0.key, sequence: $0.value) }
    }
}
