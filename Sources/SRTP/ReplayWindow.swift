/// RFC 3711 §3.3.2: which of the last `size` packet indices were already accepted. A ring of
/// bits, one per index modulo `size`: moving forward clears the bits it passes. Inline storage:
/// a window is copied out of its dictionary and back per packet, which must not allocate.
struct ReplayWindow {
    static let size: Int64 = 1_024
    private var bits = InlineArray<16, UInt64>(repeating: 0)
    /// The highest index accepted; -1 before the first.
    private(set) var highest: Int64 = -1

    enum Verdict: Equatable { case fresh, replayed, tooOld }

    func check(_ index: Int64) -> Verdict {
        guard index >= 0 else { return .tooOld }
        if index > highest { return .fresh }
        if highest - index >= Self.size { return .tooOld }
        return isSet(index) ? .replayed : .fresh
    }

    /// Call only for an index `check` found fresh, once the packet authenticated.
    mutating func accept(_ index: Int64) {
        if index > highest {
            if highest < 0 || index - highest >= Self.size {
                for word in bits.indices { bits[word] = 0 }
            } else {
                var cleared = highest + 1
                while cleared <= index {
                    clear(cleared)
                    cleared += 1
                }
            }
            highest = index
        }
        let slot = Int(index % Self.size)
        bits[slot >> 6] |= 1 << UInt64(slot & 63)
    }

    private func isSet(_ index: Int64) -> Bool {
        let slot = Int(index % Self.size)
        return bits[slot >> 6] & (1 << UInt64(slot & 63)) != 0
    }

    private mutating func clear(_ index: Int64) {
        let slot = Int(index % Self.size)
        bits[slot >> 6] &= ~(1 << UInt64(slot & 63))
    }
}
