import Testing
@testable import SCTP

@Suite struct ReceivedTSNsTests {
    /// The plain model: a set of TSNs and a cumulative TSN advanced one by one.
    struct Model {
        var cumulative: UInt32
        var above: Set<UInt32> = []

        mutating func insert(_ tsn: UInt32) {
            let offset = tsn &- cumulative
            guard offset != 0, offset <= UInt32.max / 2 else { return }
            above.insert(tsn)
            while above.remove(cumulative &+ 1) != nil { cumulative &+= 1 }
        }

        mutating func forward(to tsn: UInt32) {
            let offset = tsn &- cumulative
            guard offset != 0, offset <= UInt32.max / 2 else { return }
            above = above.filter { let distance = $0 &- tsn; return distance != 0 && distance <= UInt32.max / 2 }
            cumulative = tsn
            while above.remove(cumulative &+ 1) != nil { cumulative &+= 1 }
        }

        var blocks: [(start: UInt16, end: UInt16)] {
            var blocks: [(start: UInt16, end: UInt16)] = []
            for offset in above.map({ $0 &- cumulative }).sorted() {
                if let last = blocks.last, UInt32(last.end) + 1 == offset { blocks[blocks.count - 1].end = UInt16(offset) } else { blocks.append((UInt16(offset), UInt16(offset))) }
            }
            return blocks
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6])
    func matchesTheSetModelAcrossTheWrap(seed: UInt64) {
        let random = seeded(seed)
        let start = UInt32.max - 150
        var ranges = ReceivedTSNs(cumulative: start)
        var model = Model(cumulative: start)
        for step in 0..<3_000 {
            let tsn = ranges.cumulative &+ UInt32(random() % 120) &- 10
            if random() % 25 == 0 {
                ranges.forward(to: tsn)
                model.forward(to: tsn)
            } else {
                ranges.insert(tsn)
                model.insert(tsn)
            }
            #expect(ranges.cumulative == model.cumulative, "step \(step)")
            let blocks = ranges.gapBlocks(limit: 1_000)
            #expect(blocks.map { [$0.start, $0.end] } == model.blocks.map { [$0.start, $0.end] }, "step \(step)")
            let probe = ranges.cumulative &+ UInt32(random() % 130) &- 5
            #expect(ranges.contains(probe) == (model.above.contains(probe) || (probe &- model.cumulative) == 0 || (probe &- model.cumulative) > UInt32.max / 2))
            if !blocks.isEmpty && step % 500 == 0 { #expect(ranges.gapBlocks(limit: 1).count == 1) }
        }
    }
}
