import WireCoding

/// The operating system's randomness (the standard library's system generator), the one
/// `RandomSource` that is not seeded.
public struct SystemRandom: RandomSource {
    public init() {}

    public func next() -> UInt64 { UInt64.random(in: .min ... .max) }
}
