import Bitstreams

/// A complete encoded frame from one RTP stream.
public struct EncodedFrame: Sendable, Equatable {
    public var data: [UInt8]
    public var rtpTimestamp: UInt32
    public var isKeyframe: Bool
    /// Picture size when the frame says (VP8 keyframes, H.264 SPS, AV1 sequence headers).
    public var width: Int?
    public var height: Int?
    /// Clockwise quarter turns (0–3) the sender tagged the picture with (video orientation),
    /// nil when the extension is not negotiated.
    public var quarterTurns: UInt8?

    public init(data: [UInt8], rtpTimestamp: UInt32, isKeyframe: Bool, width: Int? = nil, height: Int? = nil, quarterTurns: UInt8? = nil) {
        self.data = data
        self.rtpTimestamp = rtpTimestamp
        self.isKeyframe = isKeyframe
        self.width = width
        self.height = height
        self.quarterTurns = quarterTurns
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
    /// Whether this payload begins a keyframe, where the payload header says so (else: whether
    /// it begins a frame). A stream that starts anywhere else waits a moment for earlier packets.
    func isKeyframeStart(_ payload: ArraySlice<UInt8>) -> Bool
    /// A frame of one packet (every audio frame): no payload list is built for it.
    func assemble(single payload: ArraySlice<UInt8>, timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame
}

extension Depacketizer {
    public func isKeyframeStart(_ payload: ArraySlice<UInt8>) -> Bool { isFrameStart(payload) }
    public func assemble(single payload: ArraySlice<UInt8>, timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        try assemble([payload], timestamp: timestamp)
    }
}

/// Opus (RFC 7587): one packet is one frame.
public struct OpusDepacketizer: Depacketizer {
    public init() {}
    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool { true }
    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        guard payloads.count == 1, let payload = payloads.first else { throw .malformed("Opus frame must be one non-empty packet") }
        return try assemble(single: payload, timestamp: timestamp)
    }
    public func assemble(single payload: ArraySlice<UInt8>, timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        guard !payload.isEmpty else { throw .malformed("Opus frame must be one non-empty packet") }
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

    /// The first partition's first byte: its low bit is 0 on a keyframe (RFC 6386 frame tag).
    public func isKeyframeStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard isFrameStart(payload), let length = VP8Depacketizer.descriptorLength(payload), payload.count > length else { return false }
        return payload[payload.startIndex + length] & 0x01 == 0
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
