import Bitstreams

/// Builds the AV1CodecConfigurationRecord ("av1C"), WebM's V_AV1 CodecPrivate, from a
/// sequence header OBU (AV1-ISOBMFF §2.3; the Matroska AV1 mapping uses the same record).
public struct AV1CodecConfiguration: Sendable, Equatable {
    public var sequence: AV1SequenceHeader
    /// The sequence header OBU as it goes into configOBUs (with obu_has_size_field set).
    public var sequenceHeaderOBU: [UInt8]

    public enum ParseError: Error, Equatable {
        case truncated
        case noSequenceHeader
        case unsupportedOBU(reason: String)

        init(_ error: BitstreamError) {
            switch error {
            case .truncated: self = .truncated
            case .invalid(let reason): self = .unsupportedOBU(reason: reason)
            }
        }
    }

    public var seqProfile: UInt8 { sequence.profile }
    public var maxFrameWidth: Int { sequence.maxFrameWidth }
    public var maxFrameHeight: Int { sequence.maxFrameHeight }
    public var chromaSubsamplingX: Bool { sequence.chromaSubsamplingX }
    public var chromaSubsamplingY: Bool { sequence.chromaSubsamplingY }

    /// The av1C record: 4 bytes of fields followed by the sequence header OBU.
    public var codecPrivate: [UInt8] { AV1CodecConfiguration.recordFields(sequence) + sequenceHeaderOBU }

    /// The record's four leading bytes alone (an av1C without configOBUs is valid: a file can
    /// start with it before a sequence header is known, and the real fields replace it in place).
    public static func recordFields(_ sequence: AV1SequenceHeader) -> [UInt8] {
        var flags = sequence.tier0 << 7
        if sequence.highBitdepth { flags |= 0x40 }
        if sequence.twelveBit { flags |= 0x20 }
        if sequence.monochrome { flags |= 0x10 }
        if sequence.chromaSubsamplingX { flags |= 0x08 }
        if sequence.chromaSubsamplingY { flags |= 0x04 }
        flags |= sequence.chromaSamplePosition & 0x03
        // marker 1 and version 1; profile and level; flags; no initial_presentation_delay.
        return [0x81, (sequence.profile << 5) | (sequence.levelIndex0 & 0x1F), flags, 0]
    }

    /// The four record bytes a file starts with before any sequence header is known: main
    /// profile, level 31 (unconstrained), 8-bit 4:2:0. The decoder reads the sequence header in
    /// the blocks; the fields are replaced in place once one arrives.
    public static let provisionalRecord: [UInt8] = [0x81, 0x1F, 0x0C, 0x00]

    /// Finds the first sequence header OBU in a temporal unit (low-overhead OBU format).
    public init(temporalUnit: [UInt8]) throws(ParseError) {
        let obus: [AV1OBU]
        do { obus = try AV1OBU.split(temporalUnit[...]) } catch { throw ParseError(error) }
        guard let header = obus.first(where: { $0.header.type == AV1OBUType.sequenceHeader.rawValue }) else { throw .noSequenceHeader }
        try self.init(sequenceHeaderPayload: Array(temporalUnit[header.payload]))
    }

    /// Parses a sequence header OBU's payload (the bytes after its OBU header and size).
    public init(sequenceHeaderPayload payload: [UInt8]) throws(ParseError) {
        do { sequence = try AV1SequenceHeader(payload: payload[...]) } catch { throw ParseError(error) }
        // configOBUs carry the OBU with its header and an explicit size field.
        var obu: [UInt8] = []
        AV1OBUHeader(type: AV1OBUType.sequenceHeader.rawValue, hasSizeField: true).appendSized(to: &obu)
        LEB128.append(payload.count, to: &obu)
        obu.append(contentsOf: payload)
        sequenceHeaderOBU = obu
    }
}
