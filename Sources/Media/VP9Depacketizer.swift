import Bitstreams

/// The VP9 payload descriptor (RFC 9628 §4.2), as far as a receiver needs it.
public struct VP9PayloadDescriptor: Sendable, Equatable {
    /// I: a 7- or 15-bit picture ID follows.
    public var pictureID: UInt16?
    /// P: inter-picture predicted (not an intra picture).
    public var interPredicted: Bool
    /// F: flexible mode (references as P_DIFFs) rather than non-flexible (TL0PICIDX).
    public var flexible: Bool
    /// B / E: the packet starts / ends a layer frame.
    public var startOfFrame: Bool
    public var endOfFrame: Bool
    /// Z: not a reference for upper spatial layers.
    public var notUpperLayerReference: Bool
    /// L: layer indices.
    public var temporalID: UInt8?
    public var spatialID: UInt8?
    public var switchingUpPoint = false
    public var interLayerDependency = false
    /// Non-flexible mode with layer indices: the temporal layer 0 picture index.
    public var tl0PictureIndex: UInt8?
    /// Flexible mode, inter-predicted: up to three reference picture ID differences.
    public var referenceDifferences: [UInt8] = []
    /// V: the scalability structure.
    public var scalability: VP9ScalabilityStructure?
    /// Bytes the descriptor takes before the VP9 payload.
    public var length: Int

    /// Parses the descriptor at the start of `payload`; every length is checked against it.
    public static func parse(_ payload: ArraySlice<UInt8>) throws(DepacketizeError) -> VP9PayloadDescriptor {
        var reader = SliceReader(payload)
        guard let first = reader.byte() else { throw .malformed("empty VP9 payload") }
        var descriptor = VP9PayloadDescriptor(pictureID: nil, interPredicted: first & 0x40 != 0, flexible: first & 0x10 != 0,
                                              startOfFrame: first & 0x08 != 0, endOfFrame: first & 0x04 != 0,
                                              notUpperLayerReference: first & 0x01 != 0, length: 0)
        if first & 0x80 != 0 {  // I
            guard let high = reader.byte() else { throw .malformed("VP9 picture ID truncated") }
            if high & 0x80 != 0 {  // M: 15-bit picture ID
                guard let low = reader.byte() else { throw .malformed("VP9 15-bit picture ID truncated") }
                descriptor.pictureID = UInt16(high & 0x7F) << 8 | UInt16(low)
            } else {
                descriptor.pictureID = UInt16(high)
            }
        }
        if first & 0x20 != 0 {  // L
            guard let layers = reader.byte() else { throw .malformed("VP9 layer indices truncated") }
            descriptor.temporalID = layers >> 5
            descriptor.switchingUpPoint = layers & 0x10 != 0
            descriptor.spatialID = layers >> 1 & 0x07
            descriptor.interLayerDependency = layers & 0x01 != 0
            if !descriptor.flexible {
                guard let index = reader.byte() else { throw .malformed("VP9 TL0PICIDX truncated") }
                descriptor.tl0PictureIndex = index
            }
        }
        if descriptor.flexible && descriptor.interPredicted {
            // Up to three P_DIFF bytes; N says another follows (RFC 9628 §4.2).
            while true {
                guard let difference = reader.byte() else { throw .malformed("VP9 P_DIFF truncated") }
                descriptor.referenceDifferences.append(difference >> 1)
                guard difference & 0x01 != 0 else { break }
                guard descriptor.referenceDifferences.count < 3 else { throw .malformed("VP9 descriptor has more than three P_DIFFs") }
            }
        }
        if first & 0x02 != 0 {  // V
            descriptor.scalability = try VP9ScalabilityStructure.parse(&reader)
        }
        descriptor.length = reader.consumed
        return descriptor
    }
}

/// The scalability structure (SS, RFC 9628 §4.2.1): spatial layer sizes and the picture group.
public struct VP9ScalabilityStructure: Sendable, Equatable {
    public struct PictureGroupEntry: Sendable, Equatable {
        public var temporalID: UInt8
        public var switchingUpPoint: Bool
        public var referenceDifferences: [UInt8]
    }

    public var spatialLayers: Int
    /// Per spatial layer, when Y is set.
    public var layerSizes: [(width: Int, height: Int)]
    public var pictureGroup: [PictureGroupEntry]

    public static func == (lhs: VP9ScalabilityStructure, rhs: VP9ScalabilityStructure) -> Bool {
        lhs.spatialLayers == rhs.spatialLayers && lhs.pictureGroup == rhs.pictureGroup
            && lhs.layerSizes.map(\.width) == rhs.layerSizes.map(\.width) && lhs.layerSizes.map(\.height) == rhs.layerSizes.map(\.height)
    }

    static func parse(_ reader: inout SliceReader) throws(DepacketizeError) -> VP9ScalabilityStructure {
        guard let header = reader.byte() else { throw .malformed("VP9 SS truncated") }
        let layers = Int(header >> 5) + 1  // N_S + 1: at most 8
        var structure = VP9ScalabilityStructure(spatialLayers: layers, layerSizes: [], pictureGroup: [])
        if header & 0x10 != 0 {  // Y
            for _ in 0..<layers {
                guard let width = reader.uint16(), let height = reader.uint16() else { throw .malformed("VP9 SS layer size truncated") }
                structure.layerSizes.append((Int(width), Int(height)))
            }
        }
        if header & 0x08 != 0 {  // G
            guard let count = reader.byte() else { throw .malformed("VP9 SS picture group truncated") }
            for _ in 0..<count {
                guard let entry = reader.byte() else { throw .malformed("VP9 SS picture group entry truncated") }
                var differences: [UInt8] = []
                for _ in 0..<(entry >> 2 & 0x03) {  // R: up to three
                    guard let difference = reader.byte() else { throw .malformed("VP9 SS P_DIFF truncated") }
                    differences.append(difference)
                }
                structure.pictureGroup.append(PictureGroupEntry(temporalID: entry >> 5, switchingUpPoint: entry & 0x10 != 0,
                                                                referenceDifferences: differences))
            }
        }
        return structure
    }
}

/// VP9 (RFC 9628). The packets of one picture (one RTP timestamp, up to the marker) hold one
/// layer frame per spatial layer, each from a B packet to an E packet. One layer frame is written
/// as it is; several become one superframe (VP9 bitstream annex B), so libvpx decodes every layer
/// and shows the top one. A keyframe is confirmed from the base layer's uncompressed header, which
/// also gives the size (the SS, when present, gives the top layer's).
public struct VP9Depacketizer: Depacketizer {
    public init() {}

    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let descriptor = try? VP9PayloadDescriptor.parse(payload) else { return false }
        return descriptor.startOfFrame && (descriptor.spatialID ?? 0) == 0
    }

    /// The descriptor's P bit: a picture predicted from no other starts a keyframe.
    public func isKeyframeStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let descriptor = try? VP9PayloadDescriptor.parse(payload) else { return false }
        return descriptor.startOfFrame && (descriptor.spatialID ?? 0) == 0 && !descriptor.interPredicted
    }

    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        var layerFrames: [[UInt8]] = []
        var current: [UInt8]?
        var base: VP9PayloadDescriptor?
        var scalability: VP9ScalabilityStructure?
        for payload in payloads {
            let descriptor = try VP9PayloadDescriptor.parse(payload)
            if base == nil { base = descriptor }
            if let structure = descriptor.scalability { scalability = structure }
            if descriptor.startOfFrame {
                guard current == nil else { throw .malformed("VP9 layer frame starts before the previous one ended") }
                current = []
            }
            guard current != nil else { throw .malformed("VP9 packet continues a layer frame that never started") }
            current?.append(contentsOf: payload.dropFirst(descriptor.length))
            if descriptor.endOfFrame, let frame = current {
                guard !frame.isEmpty else { throw .malformed("empty VP9 layer frame") }
                layerFrames.append(frame)
                current = nil
                guard layerFrames.count <= VP9Superframe.maximumFrames else { throw .malformed("more than 8 VP9 layer frames in one picture") }
            }
        }
        guard current == nil else { throw .malformed("VP9 picture ends inside a layer frame") }
        guard let first = layerFrames.first, let base else { throw .malformed("VP9 picture without a frame") }
        let data = layerFrames.count == 1 ? first : VP9Superframe.pack(layerFrames)
        let header = VP9FrameHeader(first)
        let isKeyframe = !base.interPredicted && header?.isKeyframe == true
        var frame = EncodedFrame(data: data, rtpTimestamp: timestamp, isKeyframe: isKeyframe)
        if isKeyframe {
            let top = scalability?.layerSizes.last
            frame.width = top?.width ?? header?.width
            frame.height = top?.height ?? header?.height
        }
        return frame
    }
}

/// VP9 superframes (VP9 bitstream specification, annex B): frames back to back, then an index
/// of their sizes framed by a marker byte at both ends.
public enum VP9Superframe {
    public static let maximumFrames = 8

    public static func pack(_ frames: [[UInt8]]) -> [UInt8] {
        let largest = frames.map(\.count).max() ?? 0
        let sizeBytes = largest < 1 << 8 ? 1 : largest < 1 << 16 ? 2 : largest < 1 << 24 ? 3 : 4
        let marker = UInt8(0xC0 | (sizeBytes - 1) << 3 | (frames.count - 1))
        var out: [UInt8] = []
        out.reserveCapacity(frames.reduce(0) { $0 + $1.count } + 2 + sizeBytes * frames.count)
        for frame in frames { out += frame }
        out.append(marker)
        for frame in frames {
            for index in 0..<sizeBytes { out.append(UInt8(truncatingIfNeeded: frame.count >> (8 * index))) }
        }
        out.append(marker)
        return out
    }

    /// The frames of a superframe, or nil when `data` does not end with a valid index whose
    /// (non-empty) frames fill everything before it.
    public static func unpack(_ data: [UInt8]) -> [[UInt8]]? {
        guard let marker = data.last, marker & 0xE0 == 0xC0 else { return nil }
        let count = Int(marker & 0x07) + 1
        let sizeBytes = Int(marker >> 3 & 0x03) + 1
        let indexLength = 2 + sizeBytes * count
        guard data.count >= indexLength, data[data.count - indexLength] == marker else { return nil }
        var frames: [[UInt8]] = []
        var offset = 0
        var position = data.count - indexLength + 1
        for _ in 0..<count {
            var size = 0
            for index in 0..<sizeBytes { size |= Int(data[position + index]) << (8 * index) }
            position += sizeBytes
            guard size > 0, size <= data.count - indexLength - offset else { return nil }
            frames.append(Array(data[offset..<(offset + size)]))
            offset += size
        }
        return offset == data.count - indexLength ? frames : nil
    }
}

/// A bounds-checked reader over a payload slice.
struct SliceReader {
    private let slice: ArraySlice<UInt8>
    private(set) var consumed = 0

    init(_ slice: ArraySlice<UInt8>) { self.slice = slice }

    mutating func byte() -> UInt8? {
        guard consumed < slice.count else { return nil }
        defer { consumed += 1 }
        return slice[slice.startIndex + consumed]
    }

    mutating func uint16() -> UInt16? {
        guard let high = byte(), let low = byte() else { return nil }
        return UInt16(high) << 8 | UInt16(low)
    }
}
