import Bitstreams

/// AV1 (AOM "RTP Payload Format for AV1", v1.0): OBU elements behind a one-byte aggregation
/// header, written out as a low-overhead temporal unit (every OBU with its size field), without
/// temporal delimiters, tile lists or padding, as the Matroska AV1 mapping wants. A frame is a
/// key frame when its temporal unit carries a sequence header and its first frame header says
/// KEY_FRAME; its size is the key frame's render size.
public struct AV1Depacketizer: Depacketizer {
    public static let maximumOBUsPerFrame = 1_024

    public init() {}

    /// The aggregation header (Z|Y|W|N|reserved).
    struct AggregationHeader {
        var continuesPrevious: Bool  // Z
        var continuesInNext: Bool  // Y
        var elementCount: Int  // W: 0 means every element has a length field
        var startsSequence: Bool  // N

        init(_ byte: UInt8) {
            continuesPrevious = byte & 0x80 != 0
            continuesInNext = byte & 0x40 != 0
            elementCount = Int(byte >> 4 & 0x03)
            startsSequence = byte & 0x08 != 0
        }
    }

    /// A temporal unit starts with a whole OBU that can open one: a sequence header, a
    /// temporal delimiter, or the base layer's frame (header).
    public func isFrameStart(_ payload: ArraySlice<UInt8>) -> Bool {
        guard let first = payload.first, payload.count >= 2 else { return false }
        let aggregation = AggregationHeader(first)
        guard !aggregation.continuesPrevious else { return false }
        var element = payload.dropFirst()
        if aggregation.elementCount != 1 {
            guard let (length, lengthSize) = LEB128.read(element), length > 0 else { return false }
            element = element.dropFirst(lengthSize)
        }
        guard let header = try? AV1OBUHeader(parsing: element) else { return false }
        switch AV1OBUType(rawValue: header.type) {
        case .sequenceHeader, .temporalDelimiter: return true
        case .frameHeader, .frame: return header.spatialID == 0
        default: return false
        }
    }

    public func assemble(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        var unit = TemporalUnitBuilder(capacity: payloads.reduce(0) { $0 + $1.count + 8 })
        var fragment: [UInt8]?
        for payload in payloads {
            guard let first = payload.first else { throw .malformed("empty AV1 payload") }
            let aggregation = AggregationHeader(first)
            let elements = try AV1Depacketizer.elements(of: payload.dropFirst(), count: aggregation.elementCount)
            for (index, element) in elements.enumerated() {
                let isContinuation = index == 0 && aggregation.continuesPrevious
                let isCutShort = index == elements.count - 1 && aggregation.continuesInNext
                if isContinuation {
                    guard fragment != nil else { throw .malformed("AV1 OBU fragment without its start") }
                    fragment?.append(contentsOf: element)
                } else {
                    guard fragment == nil else { throw .malformed("AV1 OBU fragment not continued") }
                    if !isCutShort {
                        try unit.add(obu: element)
                        continue
                    }
                    fragment = Array(element)
                }
                if !isCutShort, let whole = fragment {
                    try unit.add(obu: whole[...])
                    fragment = nil
                }
            }
        }
        guard fragment == nil else { throw .malformed("AV1 OBU fragment never ends") }
        return try unit.frame(timestamp: timestamp)
    }

    /// The OBU elements of one payload (after the aggregation header).
    static func elements(of body: ArraySlice<UInt8>, count: Int) throws(DepacketizeError) -> [ArraySlice<UInt8>] {
        var elements: [ArraySlice<UInt8>] = []
        var cursor = body.startIndex
        while cursor < body.endIndex {
            if count != 0 && elements.count == count - 1 {
                elements.append(body[cursor...])  // the last of W elements has no length field
                break
            }
            guard let (length, lengthSize) = LEB128.read(body[cursor...]) else { throw .malformed("AV1 element length truncated") }
            let start = cursor + lengthSize
            guard length > 0, length <= body.endIndex - start else { throw .malformed("AV1 element length \(length) past the packet") }
            elements.append(body[start..<(start + length)])
            cursor = start + length
            guard elements.count <= AV1Depacketizer.maximumOBUsPerFrame else { throw .malformed("too many AV1 OBU elements") }
        }
        guard count == 0 || elements.count == count else { throw .malformed("AV1 packet has \(elements.count) elements, W says \(count)") }
        guard !elements.isEmpty else { throw .malformed("AV1 packet without OBU elements") }
        return elements
    }
}

/// Collects whole OBUs into a low-overhead temporal unit and notes what its headers say.
struct TemporalUnitBuilder {
    private var data: [UInt8] = []
    private var obuCount = 0
    private var sequence: AV1SequenceHeader?
    private var firstFrame: AV1FrameHeader?
    private var sawFrame = false

    init(capacity: Int) { data.reserveCapacity(capacity) }

    mutating func add(obu: ArraySlice<UInt8>) throws(DepacketizeError) {
        let header: AV1OBUHeader
        do { header = try AV1OBUHeader(parsing: obu) } catch { throw .malformed("AV1 OBU header: \(error)") }
        var payload = obu.dropFirst(header.length)
        if header.hasSizeField {
            // A sender may keep the size field; it must fit in the element.
            guard let (size, sizeLength) = LEB128.read(payload), size <= payload.count - sizeLength else {
                throw .malformed("AV1 OBU size past its element")
            }
            payload = payload.dropFirst(sizeLength).prefix(size)
        }
        switch AV1OBUType(rawValue: header.type) {
        case .temporalDelimiter, .tileList, .padding: return
        case .sequenceHeader: try noteSequenceHeader(payload)
        case .frameHeader, .frame: try noteFrameHeader(payload, header)
        default: break
        }
        obuCount += 1
        guard obuCount <= AV1Depacketizer.maximumOBUsPerFrame else { throw .malformed("too many AV1 OBUs in one temporal unit") }
        header.appendSized(to: &data)
        LEB128.append(payload.count, to: &data)
        data.append(contentsOf: payload)
    }

    private mutating func noteSequenceHeader(_ payload: ArraySlice<UInt8>) throws(DepacketizeError) {
        do {
            let parsed = try AV1SequenceHeader(payload: payload)
            if sequence == nil { sequence = parsed }
        } catch {
            throw .malformed("AV1 sequence header: \(error)")
        }
    }

    private mutating func noteFrameHeader(_ payload: ArraySlice<UInt8>, _ header: AV1OBUHeader) throws(DepacketizeError) {
        guard !sawFrame else { return }
        sawFrame = true
        // Without a sequence header in this unit it cannot be a key frame recbot can start on.
        guard let sequence else { return }
        do { firstFrame = try AV1FrameHeader(payload: payload, obu: header, sequence: sequence) } catch {
            throw .malformed("AV1 frame header: \(error)")
        }
    }

    func frame(timestamp: UInt32) throws(DepacketizeError) -> EncodedFrame {
        guard obuCount > 0 else { throw .malformed("AV1 temporal unit without OBUs") }
        var frame = EncodedFrame(data: data, rtpTimestamp: timestamp, isKeyframe: firstFrame?.isShownKeyFrame == true)
        if frame.isKeyframe, let sequence {
            frame.width = firstFrame?.renderWidth ?? sequence.maxFrameWidth
            frame.height = firstFrame?.renderHeight ?? sequence.maxFrameHeight
        }
        return frame
    }
}
