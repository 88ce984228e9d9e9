/// Sums senders' audio without clipping: a limiter whose gain drops at once to keep a frame's
/// peak within full scale and recovers slowly (about a second), ramped across each frame so
/// no step is heard.
public struct AudioMixer: Sendable {
    public static let fullScale: Int32 = 32_000
    /// Gain regained per 20 ms frame: from any reduction back to 1 in about a second.
    static let release: Float = 0.05
    private(set) var gain: Float = 1

    public init() {}

    /// Mixes equal-length interleaved frames into one.
    public mutating func mix(_ frames: [[Int16]], samples: Int) -> [Int16] {
        var sum = [Int32](repeating: 0, count: samples)
        for frame in frames {
            for index in 0..<min(samples, frame.count) { sum[index] += Int32(frame[index]) }
        }
        let peak = sum.reduce(Int32(0)) { max($0, abs($1)) }
        let needed: Float = peak > Self.fullScale ? Float(Self.fullScale) / Float(peak) : 1
        let target = min(needed, min(1, gain + Self.release))
        let start = min(gain, target)  // a drop applies from the frame's first sample
        var out = [Int16](repeating: 0, count: samples)
        for index in 0..<samples {
            let step = samples > 1 ? Float(index) / Float(samples - 1) : 1
            let value = Float(sum[index]) * (start + (target - start) * step)
            out[index] = Int16(max(-32_767, min(32_767, value.rounded())))
        }
        gain = target
        return out
    }
}
