import Synchronization

/// Where randomness comes from, injected like time (`TimeSource`): the cores and the session
/// above them (ICE credentials, RTCP SSRCs, report jitter, segment UIDs, backoff jitter) draw
/// from one of these, so a simulated session is repeatable. `SystemRandom` (target SystemClock)
/// is the one that draws from the operating system.
public protocol RandomSource: Sendable {
    func next() -> UInt64
}

extension RandomSource {
    /// Uniform in 0..<1 (53 bits).
    public func unitInterval() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }

    public func bytes(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let word = next()
            for shift in stride(from: 0, to: 64, by: 8) where result.count < count { result.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        return result
    }
}

/// A seeded source (SplitMix64) for tests and simulations: one seed, one sequence.
public final class SeededRandom: RandomSource {
    private let generator: Mutex<SplitMix64>

    public init(seed: UInt64) { generator = Mutex(SplitMix64(seed: seed)) }

    public func next() -> UInt64 { generator.withLock { $0.next() } }
}
