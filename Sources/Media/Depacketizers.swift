/// A complete encoded frame from one RTP stream.
public struct EncodedFrame: Sendable, Equatable {
    public var data: [UInt8]
    public var rtpTimestamp: UInt32
    public var isKeyframe: Bool
    /// Picture size when the frame says (VP8 keyframes, H.264 SPS, AV1 sequence headers).
    public var width: Int?
    public var height: Int?

    public init(data: [UInt8], rtpTimestamp: UInt32, isKeyframe: Bool, width: Int? = nil, height: Int? = nil) {
        self.data = data
        self.rtpTimestamp = rtpTimestamp
        self.isKeyframe = isKeyframe
        self.width = width
        self.height = height
    }
}

public enum DepacketizeError: Error, Equatable, Sendable {
    case malformed(String)
}

/// Codec-specific rules for turning RTP payloads of one frame into the frame.
public protocol Depacketizer: Sendable {
    /// Whether this payload begins a new frame (so a frame can be known complete from its start).
    func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool
    /// Joins the payloads of one frame, in sequence order.
    func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame
}

/// Opus (RFC 7587): one packet is one frame.
public struct OpusDepacketizer: Depacketizer {
    public init() {}
    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool { true }
    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        guard payloads.count == 1, let payload = payloads.first, !payload.isEmpty else { throw .malformed("Opus frame must be one non-empty packet") }
        return EncodedFrame(data: Array(payload), rtpTimestamp: timestamp, isKeyframe: true)
    }
}

/// VP8 (RFC 7741): strips the payload descriptor; a keyframe carries its size.
public struct VP8Depacketizer: Depacketizer {
    public init() {}

    /// Length of the payload descriptor, or nil when truncated.
    static func descriptorLength(_ payload: ArraySlice<UInt8>) -> Int? {
        guard let first = payload.first else { return nil }
        var length = 1
        if first & 0x80 != 0 {  // X: extension byte follows
            guard payload.count > length else { return nil }
            let x = payload[payload.startIndex + length]
            length += 1
            if x & 0x80 != 0 {  // I: picture id, 7 or 15 bits
                guard payload.count > length else { return nil }
                length += payload[payload.startIndex + length] & 0x80 != 0 ? 2 : 1
            }
            if x & 0x40 != 0 { length += 1 }  // L: TL0PICIDX
            if x & 0x30 != 0 { length += 1 }  // T or K: TID/KEYIDX
        }
        return payload.count >= length ? length : nil
    }

    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let first = payload.first else { return false }
        return first & 0x10 != 0 && first & 0x07 == 0  // S bit, partition 0
    }

    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        var data: [UInt8] = []
        data.reserveCapacity(payloads.reduce(0) { $0 + $1.count })
        for payload in payloads {
            guard let length = VP8Depacketizer.descriptorLength(payload) else { throw .malformed("truncated VP8 payload descriptor") }
            data.append(contentsOf: payload.dropFirst(length))
        }
        guard let first = data.first else { throw .malformed("empty VP8 frame") }
        let isKeyframe = first & 0x01 == 0
        var frame = EncodedFrame(data: data, rtpTimestamp: timestamp, isKeyframe: isKeyframe)
        // Keyframe header: 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height.
        if isKeyframe {
            guard data.count >= 10, data[3] == 0x9D, data[4] == 0x01, data[5] == 0x2A else { throw .malformed("VP8 keyframe without start code") }
            frame.width = Int(UInt16(data[6]) | UInt16(data[7]) << 8) & 0x3FFF
            frame.height = Int(UInt16(data[8]) | UInt16(data[9]) << 8) & 0x3FFF
        }
        return frame
    }
}

/// H.264 (RFC 6184, packetization modes 0 and 1): single NAL units, STAP-A and FU-A,
/// written out as Annex-B (start codes), Sora's convention in WebM.
public struct H264Depacketizer: Depacketizer {
    public static let maximumNALUnitsPerFrame = 1_024

    public init() {}

    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let header = payload.first else { return false }
        switch header & 0x1F {
        case 28:  // FU-A: start bit
            return payload.count >= 2 && payload[payload.startIndex + 1] & 0x80 != 0
        default:
            return true  // a whole NAL unit or an aggregate starts something; the marker closes frames
        }
    }

    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        var nalUnits: [[UInt8]] = []
        var fragment: [UInt8]?
        for payload in payloads {
            guard let header = payload.first else { throw .malformed("empty H.264 payload") }
            let type = header & 0x1F
            switch type {
            case 1...23:
                nalUnits.append(Array(payload))
            case 24:  // STAP-A: [size(2) NAL]...
                var index = payload.startIndex + 1
                while index < payload.endIndex {
                    guard index + 2 <= payload.endIndex else { throw .malformed("truncated STAP-A size") }
                    let size = Int(payload[index]) << 8 | Int(payload[index + 1])
                    index += 2
                    guard size > 0, index + size <= payload.endIndex else { throw .malformed("STAP-A unit overruns") }
                    nalUnits.append(Array(payload[index..<(index + size)]))
                    index += size
                }
            case 28:  // FU-A
                guard payload.count >= 2 else { throw .malformed("truncated FU-A") }
                let fuHeader = payload[payload.startIndex + 1]
                if fuHeader & 0x80 != 0 {
                    fragment = [(header & 0xE0) | (fuHeader & 0x1F)]
                }
                guard fragment != nil else { throw .malformed("FU-A continuation without start") }
                fragment?.append(contentsOf: payload.dropFirst(2))
                if fuHeader & 0x40 != 0, let whole = fragment {
                    nalUnits.append(whole)
                    fragment = nil
                }
            default:
                throw .malformed("unsupported H.264 NAL/packet type \(type)")
            }
            guard nalUnits.count <= H264Depacketizer.maximumNALUnitsPerFrame else { throw .malformed("too many NAL units in one frame") }
        }
        guard fragment == nil else { throw .malformed("FU-A without end") }
        guard !nalUnits.isEmpty else { throw .malformed("H.264 frame without NAL units") }
        var data: [UInt8] = []
        data.reserveCapacity(nalUnits.reduce(0) { $0 + $1.count + 4 })
        var frame = EncodedFrame(data: [], rtpTimestamp: timestamp, isKeyframe: false)
        for unit in nalUnits {
            data.append(contentsOf: [0, 0, 0, 1])
            data.append(contentsOf: unit)
            switch unit[0] & 0x1F {
            case 5: frame.isKeyframe = true
            case 7:
                if let size = H264SPS.pictureSize(unit) { frame.width = size.width; frame.height = size.height }
            default: break
            }
        }
        frame.data = data
        return frame
    }
}

/// Reads the picture size from an H.264 sequence parameter set (ITU-T H.264 §7.3.2.1.1).
public enum H264SPS {
    public static func pictureSize(_ nal: [UInt8]) -> (width: Int, height: Int)? {
        // Drop emulation prevention bytes (00 00 03).
        var rbsp: [UInt8] = []
        rbsp.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal.dropFirst() {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            rbsp.append(byte)
        }
        var bits = ExpGolombReader(rbsp)
        guard let profile = bits.bits(8), bits.bits(16) != nil, bits.ue() != nil else { return nil }  // constraints+level, sps id
        var chromaFormat = 1
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            guard let format = bits.ue() else { return nil }
            chromaFormat = Int(format)
            if format == 3 { guard bits.bits(1) != nil else { return nil } }
            guard bits.ue() != nil, bits.ue() != nil, bits.bits(1) != nil, let scaling = bits.bits(1) else { return nil }
            if scaling == 1 {
                for index in 0..<(format == 3 ? 12 : 8) {
                    guard let present = bits.bits(1) else { return nil }
                    if present == 1 { guard bits.skipScalingList(index < 6 ? 16 : 64) else { return nil } }
                }
            }
        }
        guard bits.ue() != nil, let pocType = bits.ue() else { return nil }  // log2_max_frame_num
        if pocType == 0 {
            guard bits.ue() != nil else { return nil }
        } else if pocType == 1 {
            guard bits.bits(1) != nil, bits.se() != nil, bits.se() != nil, let cycle = bits.ue(), cycle <= 255 else { return nil }
            for _ in 0..<cycle { guard bits.se() != nil else { return nil } }
        }
        guard bits.ue() != nil, bits.bits(1) != nil, let widthMbs = bits.ue(), let heightUnits = bits.ue(),
              let frameMbsOnly = bits.bits(1) else { return nil }
        if frameMbsOnly == 0 { guard bits.bits(1) != nil else { return nil } }
        guard bits.bits(1) != nil, let cropping = bits.bits(1) else { return nil }
        var width = (Int(widthMbs) + 1) * 16
        var height = (Int(heightUnits) + 1) * 16 * (2 - Int(frameMbsOnly))
        if cropping == 1 {
            guard let left = bits.ue(), let right = bits.ue(), let top = bits.ue(), let bottom = bits.ue() else { return nil }
            let cropX = chromaFormat == 0 || chromaFormat == 3 ? 1 : 2
            let cropY = (chromaFormat == 1 ? 2 : 1) * (2 - Int(frameMbsOnly))
            width -= (Int(left) + Int(right)) * cropX
            height -= (Int(top) + Int(bottom)) * cropY
        }
        guard (1...16_384).contains(width), (1...16_384).contains(height) else { return nil }
        return (width, height)
    }
}

/// Bounds-checked bit reader with Exp-Golomb codes.
struct ExpGolombReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bits(_ count: Int) -> UInt32? {
        guard count <= 32, position + count <= bytes.count * 8 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<count {
            value = value << 1 | UInt32(bytes[position >> 3] >> (7 - UInt8(position & 7)) & 1)
            position += 1
        }
        return value
    }

    mutating func ue() -> UInt32? {
        var zeros = 0
        while true {
            guard let bit = bits(1) else { return nil }
            if bit == 1 { break }
            zeros += 1
            if zeros > 31 { return nil }
        }
        guard let rest = bits(zeros) else { return nil }
        return (UInt32(1) << UInt32(zeros)) - 1 + rest
    }

    mutating func se() -> Int32? {
        guard let value = ue() else { return nil }
        return value & 1 == 1 ? Int32((value + 1) / 2) : -Int32(value / 2)
    }

    mutating func skipScalingList(_ size: Int) -> Bool {
        var last: Int32 = 8, next: Int32 = 8
        for _ in 0..<size {
            if next != 0 {
                // delta_scale is −128…127 (H.264 §7.4.2.1.1.1); a crafted one must not overflow.
                guard let delta = se(), (-128...127).contains(delta) else { return false }
                next = (last + delta + 256) % 256
            }
            last = next == 0 ? last : next
        }
        return true
    }
}
