/// The 19-byte Ogg Opus identification header (RFC 7845 §5.1), WebM's A_OPUS CodecPrivate.
public struct OpusHead: Sendable, Equatable {
    public var channelCount: UInt8
    /// Samples (at 48 kHz) to discard at the start of decoding.
    public var preSkip: UInt16
    public var inputSampleRate: UInt32
    public var outputGain: Int16

    public init(channelCount: UInt8, preSkip: UInt16 = 0, inputSampleRate: UInt32 = 48_000, outputGain: Int16 = 0) {
        self.channelCount = channelCount
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
        self.outputGain = outputGain
    }

    /// Channel mapping family 0 (mono/stereo), the only one WebRTC uses.
    public var bytes: [UInt8] {
        var out: [UInt8] = Array("OpusHead".utf8)
        out.append(1)  // version
        out.append(channelCount)
        out.append(contentsOf: [UInt8(preSkip & 0xFF), UInt8(preSkip >> 8)])
        for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: inputSampleRate >> UInt32(shift))) }
        let gain = UInt16(bitPattern: outputGain)
        out.append(contentsOf: [UInt8(gain & 0xFF), UInt8(gain >> 8)])
        out.append(0)  // mapping family
        return out
    }

    /// The decoder delay in nanoseconds (WebM's CodecDelay).
    public var codecDelayNanoseconds: UInt64 { UInt64(preSkip) * 1_000_000_000 / 48_000 }
}
