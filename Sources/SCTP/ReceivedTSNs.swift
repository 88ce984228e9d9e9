/// The TSNs received above the cumulative TSN, kept as sorted, disjoint ranges. A SACK's
/// gap blocks are these ranges, so building one costs the blocks it reports, not a sort of
/// every TSN held (which a peer keeping 4 000 TSNs out of order made cost ~50 000
/// comparisons per packet).
struct ReceivedTSNs {
    /// The highest TSN received in sequence.
    private(set) var cumulative: UInt32
    /// Sorted by distance above `cumulative`; never touching each other or `cumulative`.
    private(set) var ranges: [(start: UInt32, end: UInt32)] = []

    init(cumulative: UInt32) {
        self.cumulative = cumulative
    }

    /// Offset above the cumulative TSN (1 = the next expected); 0 or "negative" (wrapped) means at or below it.
    func offset(_ tsn: UInt32) -> UInt32 { tsn &- cumulative }

    func contains(_ tsn: UInt32) -> Bool {
        let target = offset(tsn)
        if target == 0 || target > UInt32.max / 2 { return true }
        let index = firstRange(endingAtOrAfter: target)
        guard index < ranges.count else { return false }
        return offset(ranges[index].start) <= target
    }

    /// Records a TSN above the cumulative one; the cumulative TSN moves when the gap fills.
    mutating func insert(_ tsn: UInt32) {
        let target = offset(tsn)
        guard target != 0, target <= UInt32.max / 2, !contains(tsn) else { return }
        let index = firstRange(endingAtOrAfter: target)
        let joinsLeft = index > 0 && offset(ranges[index - 1].end) &+ 1 == target
        let joinsRight = index < ranges.count && offset(ranges[index].start) == target &+ 1
        switch (joinsLeft, joinsRight) {
        case (true, true):
            ranges[index - 1].end = ranges[index].end
            ranges.remove(at: index)
        case (true, false):
            ranges[index - 1].end = tsn
        case (false, true):
            ranges[index].start = tsn
        case (false, false):
            ranges.insert((tsn, tsn), at: index)
        }
        advance()
    }

    /// FORWARD-TSN: everything up to `tsn` counts as received.
    mutating func forward(to tsn: UInt32) {
        let target = offset(tsn)
        guard target != 0, target <= UInt32.max / 2 else { return }
        cumulative = tsn
        // Ranges now at or below the new cumulative TSN go; one straddling it is cut.
        while let first = ranges.first {
            let end = offset(first.end)
            if end == 0 || end > UInt32.max / 2 {
                ranges.removeFirst()
            } else {
                let start = offset(first.start)
                if start == 0 || start > UInt32.max / 2 { ranges[0].start = tsn &+ 1 }
                break
            }
        }
        advance()
    }

    /// Gap ack blocks for a SACK: offsets from the cumulative TSN, at most `limit` of them.
    func gapBlocks(limit: Int) -> [(start: UInt16, end: UInt16)] {
        var blocks: [(start: UInt16, end: UInt16)] = []
        for range in ranges.prefix(limit) {
            let start = offset(range.start), end = offset(range.end)
            guard start <= UInt32(UInt16.max) else { break }
            blocks.append((UInt16(start), UInt16(min(end, UInt32(UInt16.max)))))
        }
        return blocks
    }

    /// The first range moves into the cumulative TSN when it starts right after it.
    private mutating func advance() {
        if let first = ranges.first, offset(first.start) == 1 {
            cumulative = first.end
            ranges.removeFirst()
        }
    }

    /// Index of the first range whose end is at or above `target` (an offset); binary search.
    private func firstRange(endingAtOrAfter target: UInt32) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if offset(ranges[middle].end) < target { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
