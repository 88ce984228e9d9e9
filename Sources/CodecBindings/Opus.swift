import Foundation
import COpus

/// libopus encoder for 20 ms frames at 48 kHz.
public final class OpusEncoder {
    public let channels: Int
    public static let samplesPerFrame = 960  // 20 ms at 48 kHz
    private let encoder: OpaquePointer

    public init(channels: Int, bitrate: Int = 64_000) throws(CodecError) {
        self.channels = channels
        var error: Int32 = 0
        guard let encoder = opus_encoder_create(48_000, Int32(channels), OPUS_APPLICATION_AUDIO, &error), error == OPUS_OK else {
            throw CodecError(codec: "Opus", operation: "encoder create", code: error, detail: String(cString: opus_strerror(error)))
        }
        self.encoder = encoder
        _ = recbot_opus_encoder_set_bitrate(encoder, Int32(bitrate))
    }

    deinit { opus_encoder_destroy(encoder) }

    /// Encoder lookahead in samples: the OpusHead pre-skip for this stream.
    public var lookahead: Int {
        var value: Int32 = 0
        _ = recbot_opus_encoder_get_lookahead(encoder, &value)
        return Int(value)
    }

    /// Encodes one 20 ms frame of interleaved samples.
    public func encode(_ pcm: [Int16]) throws(CodecError) -> [UInt8] {
        precondition(pcm.count == OpusEncoder.samplesPerFrame * channels, "Opus frames are 20 ms")
        var packet = [UInt8](repeating: 0, count: 4000)
        let length = pcm.withUnsafeBufferPointer { samples in
            packet.withUnsafeMutableBufferPointer { out in
                opus_encode(encoder, samples.baseAddress!, Int32(OpusEncoder.samplesPerFrame), out.baseAddress!, Int32(out.count))
            }
        }
        guard length > 0 else {
            throw CodecError(codec: "Opus", operation: "encode", code: length, detail: String(cString: opus_strerror(length)))
        }
        return Array(packet.prefix(Int(length)))
    }

    /// A sine tone, `frame` counting 20 ms frames from the start.
    public static func tone(frequency: Double, frame: Int, channels: Int) -> [Int16] {
        var samples: [Int16] = []
        samples.reserveCapacity(samplesPerFrame * channels)
        for index in 0..<samplesPerFrame {
            let t = Double(frame * samplesPerFrame + index) / 48_000
            let value = Int16(sin(2 * Double.pi * frequency * t) * 8_000)
            for _ in 0..<channels { samples.append(value) }
        }
        return samples
    }
}

/// libopus decoder: used to prove that recorded packets decode.
public final class OpusDecoder {
    public let channels: Int
    private let decoder: OpaquePointer

    public init(channels: Int) throws(CodecError) {
        self.channels = channels
        var error: Int32 = 0
        guard let decoder = opus_decoder_create(48_000, Int32(channels), &error), error == OPUS_OK else {
            throw CodecError(codec: "Opus", operation: "decoder create", code: error, detail: String(cString: opus_strerror(error)))
        }
        self.decoder = decoder
    }

    deinit { opus_decoder_destroy(decoder) }

    /// Returns the number of samples per channel decoded from one packet.
    public func decode(_ packet: [UInt8]) throws(CodecError) -> Int {
        var pcm = [Int16](repeating: 0, count: 5760 * channels)
        return try decode(packet, into: &pcm)
    }

    /// Decodes into `pcm` (room for 120 ms: 5760 samples a channel); the samples a channel.
    func decode(_ packet: [UInt8], into pcm: inout [Int16]) throws(CodecError) -> Int {
        guard packet.count <= Int(Int32.max) else { throw CodecError(codec: "Opus", operation: "decode", code: -1, detail: "packet of \(packet.count) bytes") }
        precondition(pcm.count >= 5760 * channels, "room for the longest Opus packet")
        let samples = packet.withUnsafeBufferPointer { input in
            pcm.withUnsafeMutableBufferPointer { out in
                opus_decode(decoder, input.baseAddress, Int32(input.count), out.baseAddress!, 5760, 0)
            }
        }
        guard samples > 0 else {
            throw CodecError(codec: "Opus", operation: "decode", code: samples, detail: String(cString: opus_strerror(samples)))
        }
        return Int(samples)
    }
}
