import WireCoding

public enum SCTPError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooShort(Int)
    case badChecksum(received: UInt32, computed: UInt32)
    case chunkOverrun(type: UInt8, offset: Int)
    case malformedChunk(type: UInt8, reason: String)
    case tooManyChunks(Int)

    public var description: String {
        switch self {
        case .tooShort(let count): "SCTP packet too short (\(count) bytes)"
        case .badChecksum(let received, let computed): "SCTP checksum 0x\(String(received, radix: 16)) != 0x\(String(computed, radix: 16))"
        case .chunkOverrun(let type, let offset): "SCTP chunk \(type) at \(offset) runs past the packet"
        case .malformedChunk(let type, let reason): "malformed SCTP chunk \(type): \(reason)"
        case .tooManyChunks(let count): "SCTP packet has more than \(count) chunks"
        }
    }
}

/// An SCTP packet (RFC 9260 §3): common header and chunks. Over DTLS (RFC 8261) each DTLS
/// record carries one packet.
public struct SCTPPacket: Equatable, Sendable {
    public static let maximumChunks = 128

    public var sourcePort: UInt16
    public var destinationPort: UInt16
    public var verificationTag: UInt32
    public var chunks: [SCTPChunk]

    public init(sourcePort: UInt16, destinationPort: UInt16, verificationTag: UInt32, chunks: [SCTPChunk]) {
        self.sourcePort = sourcePort
        self.destinationPort = destinationPort
        self.verificationTag = verificationTag
        self.chunks = chunks
    }

    /// Parses untrusted bytes; the CRC-32C must match (it is stored least significant byte first).
    public init(parsing bytes: [UInt8]) throws(SCTPError) {
        guard bytes.count >= 12 else { throw .tooShort(bytes.count) }
        let received = UInt32(bytes[8]) | UInt32(bytes[9]) << 8 | UInt32(bytes[10]) << 16 | UInt32(bytes[11]) << 24
        var zeroed = bytes
        zeroed[8] = 0; zeroed[9] = 0; zeroed[10] = 0; zeroed[11] = 0
        let computed = CRC32c.checksum(zeroed)
        guard received == computed else { throw .badChecksum(received: received, computed: computed) }
        var reader = ByteReader(bytes)
        sourcePort = reader.readUInt16() ?? 0
        destinationPort = reader.readUInt16() ?? 0
        verificationTag = reader.readUInt32() ?? 0
        _ = reader.skip(4)
        chunks = []
        while reader.remaining >= 4 {
            let offset = reader.offset
            guard let type = reader.readUInt8(), let flags = reader.readUInt8(), let length = reader.readUInt16() else { break }
            guard length >= 4, let value = reader.readBytes(Int(length) - 4) else { throw .chunkOverrun(type: type, offset: offset) }
            _ = reader.skip(min(reader.remaining, (4 - Int(length) % 4) % 4))  // padding (may be absent on the last chunk)
            guard chunks.count < SCTPPacket.maximumChunks else { throw .tooManyChunks(SCTPPacket.maximumChunks) }
            chunks.append(try SCTPPacket.parseChunk(type: type, flags: flags, value: value))
        }
    }

    static func parseChunk(type: UInt8, flags: UInt8, value: [UInt8]) throws(SCTPError) -> SCTPChunk {
        var reader = ByteReader(value)
        func malformed(_ reason: String) -> SCTPError { .malformedChunk(type: type, reason: reason) }
        switch type {
        case SCTPChunkType.data:
            guard let tsn = reader.readUInt32(), let stream = reader.readUInt16(), let ssn = reader.readUInt16(),
                  let ppid = reader.readUInt32() else { throw malformed("DATA header truncated") }
            guard !reader.isAtEnd else { throw malformed("DATA without user data") }
            return .data(SCTPData(tsn: tsn, streamID: stream, streamSequence: ssn, payloadProtocol: ppid, unordered: flags & 0x04 != 0,
                                  beginning: flags & 0x02 != 0, ending: flags & 0x01 != 0, immediate: flags & 0x08 != 0,
                                  userData: reader.readBytes(reader.remaining) ?? []))
        case SCTPChunkType.initiation, SCTPChunkType.initiationAck:
            guard let tag = reader.readUInt32(), let rwnd = reader.readUInt32(), let outbound = reader.readUInt16(),
                  let inbound = reader.readUInt16(), let tsn = reader.readUInt32() else { throw malformed("INIT header truncated") }
            guard tag != 0, outbound > 0, inbound > 0 else { throw malformed("INIT with zero tag or stream count") }
            let initiation = SCTPInit(initiateTag: tag, advertisedReceiverWindow: rwnd, outboundStreams: outbound, inboundStreams: inbound,
                                      initialTSN: tsn, parameters: try parameters(&reader, type: type))
            return type == SCTPChunkType.initiation ? .initiation(initiation) : .initiationAck(initiation)
        case SCTPChunkType.selectiveAck:
            guard let cumulative = reader.readUInt32(), let rwnd = reader.readUInt32(), let gaps = reader.readUInt16(),
                  let duplicates = reader.readUInt16() else { throw malformed("SACK header truncated") }
            var blocks: [(start: UInt16, end: UInt16)] = []
            for _ in 0..<gaps {
                guard let start = reader.readUInt16(), let end = reader.readUInt16(), start <= end, start > 0 else { throw malformed("bad gap block") }
                blocks.append((start, end))
            }
            var dups: [UInt32] = []
            for _ in 0..<duplicates {
                guard let tsn = reader.readUInt32() else { throw malformed("duplicate TSNs truncated") }
                dups.append(tsn)
            }
            return .selectiveAck(SCTPSelectiveAck(cumulativeTSN: cumulative, advertisedReceiverWindow: rwnd, gapBlocks: blocks, duplicateTSNs: dups))
        case SCTPChunkType.heartbeat: return .heartbeat(info: value)
        case SCTPChunkType.heartbeatAck: return .heartbeatAck(info: value)
        case SCTPChunkType.abort: return .abort(reflected: flags & 0x01 != 0, causes: value)
        case SCTPChunkType.shutdown:
            guard let tsn = reader.readUInt32() else { throw malformed("SHUTDOWN truncated") }
            return .shutdown(cumulativeTSN: tsn)
        case SCTPChunkType.shutdownAck: return .shutdownAck
        case SCTPChunkType.error: return .error(causes: value)
        case SCTPChunkType.cookieEcho:
            guard !value.isEmpty else { throw malformed("empty cookie") }
            return .cookieEcho(cookie: value)
        case SCTPChunkType.cookieAck: return .cookieAck
        case SCTPChunkType.shutdownComplete: return .shutdownComplete(reflected: flags & 0x01 != 0)
        case SCTPChunkType.forwardTSN:
            guard let tsn = reader.readUInt32() else { throw malformed("FORWARD-TSN truncated") }
            var streams: [(stream: UInt16, sequence: UInt16)] = []
            while !reader.isAtEnd {
                guard let stream = reader.readUInt16(), let sequence = reader.readUInt16() else { throw malformed("FORWARD-TSN stream truncated") }
                streams.append((stream, sequence))
            }
            return .forwardTSN(newCumulativeTSN: tsn, streams: streams)
        case SCTPChunkType.reconfig:
            return .reconfig(try parameters(&reader, type: type).map { parameter throws(SCTPError) in try reconfigParameter(parameter) })
        default:
            return .unknown(type: type, flags: flags, value: value)
        }
    }

    static func parameters(_ reader: inout ByteReader, type: UInt8) throws(SCTPError) -> [SCTPParameter] {
        var result: [SCTPParameter] = []
        while reader.remaining >= 4 {
            guard let parameterType = reader.readUInt16(), let length = reader.readUInt16(), length >= 4,
                  let value = reader.readBytes(Int(length) - 4) else { throw .malformedChunk(type: type, reason: "parameter overruns") }
            _ = reader.skip(min(reader.remaining, (4 - Int(length) % 4) % 4))
            guard result.count < 64 else { throw .malformedChunk(type: type, reason: "too many parameters") }
            result.append(SCTPParameter(type: parameterType, value: value))
        }
        return result
    }

    static func reconfigParameter(_ parameter: SCTPParameter) throws(SCTPError) -> SCTPReconfigParameter {
        var reader = ByteReader(parameter.value)
        func streams() throws(SCTPError) -> [UInt16] {
            guard reader.remaining % 2 == 0 else { throw .malformedChunk(type: SCTPChunkType.reconfig, reason: "odd stream list") }
            return (0..<(reader.remaining / 2)).compactMap { _ in reader.readUInt16() }
        }
        switch parameter.type {
        case SCTPParameter.outgoingResetRequest:
            guard let request = reader.readUInt32(), let response = reader.readUInt32(), let last = reader.readUInt32() else {
                throw .malformedChunk(type: SCTPChunkType.reconfig, reason: "outgoing reset truncated")
            }
            return .outgoingReset(requestSequence: request, responseSequence: response, lastTSN: last, streams: try streams())
        case SCTPParameter.incomingResetRequest:
            guard let request = reader.readUInt32() else { throw .malformedChunk(type: SCTPChunkType.reconfig, reason: "incoming reset truncated") }
            return .incomingReset(requestSequence: request, streams: try streams())
        case SCTPParameter.reconfigResponse:
            guard let response = reader.readUInt32(), let result = reader.readUInt32() else {
                throw .malformedChunk(type: SCTPChunkType.reconfig, reason: "response truncated")
            }
            return .response(responseSequence: response, result: result)
        default:
            return .other(parameter)
        }
    }

    // MARK: - Serialisation

    public var serialized: [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.write(sourcePort)
        writer.write(destinationPort)
        writer.write(verificationTag)
        writer.write(UInt32(0))
        for chunk in chunks { SCTPPacket.write(chunk, into: &writer) }
        var bytes = writer.bytes
        let crc = CRC32c.checksum(bytes)
        bytes[8] = UInt8(crc & 0xFF); bytes[9] = UInt8(crc >> 8 & 0xFF); bytes[10] = UInt8(crc >> 16 & 0xFF); bytes[11] = UInt8(crc >> 24)
        return bytes
    }

    static func write(_ chunk: SCTPChunk, into writer: inout ByteWriter) {
        var body = ByteWriter(capacity: 32)
        var flags: UInt8 = 0
        let type: UInt8
        // The chunk length covers the padding of every parameter but the last (RFC 9260 §3.2).
        func writeParameters(_ parameters: [SCTPParameter]) {
            for (index, parameter) in parameters.enumerated() {
                body.write(parameter.type)
                body.write(UInt16(parameter.value.count + 4))
                body.write(parameter.value)
                if index < parameters.count - 1 { body.write(zeros: (4 - parameter.value.count % 4) % 4) }
            }
        }
        switch chunk {
        case .data(let data):
            type = SCTPChunkType.data
            flags = (data.immediate ? 0x08 : 0) | (data.unordered ? 0x04 : 0) | (data.beginning ? 0x02 : 0) | (data.ending ? 0x01 : 0)
            body.write(data.tsn); body.write(data.streamID); body.write(data.streamSequence); body.write(data.payloadProtocol)
            body.write(data.userData)
        case .initiation(let value), .initiationAck(let value):
            if case .initiation = chunk { type = SCTPChunkType.initiation } else { type = SCTPChunkType.initiationAck }
            body.write(value.initiateTag); body.write(value.advertisedReceiverWindow)
            body.write(value.outboundStreams); body.write(value.inboundStreams); body.write(value.initialTSN)
            writeParameters(value.parameters)
        case .selectiveAck(let sack):
            type = SCTPChunkType.selectiveAck
            body.write(sack.cumulativeTSN); body.write(sack.advertisedReceiverWindow)
            body.write(UInt16(sack.gapBlocks.count)); body.write(UInt16(sack.duplicateTSNs.count))
            for block in sack.gapBlocks { body.write(block.start); body.write(block.end) }
            for tsn in sack.duplicateTSNs { body.write(tsn) }
        case .heartbeat(let info): type = SCTPChunkType.heartbeat; body.write(info)
        case .heartbeatAck(let info): type = SCTPChunkType.heartbeatAck; body.write(info)
        case .abort(let reflected, let causes): type = SCTPChunkType.abort; flags = reflected ? 1 : 0; body.write(causes)
        case .shutdown(let tsn): type = SCTPChunkType.shutdown; body.write(tsn)
        case .shutdownAck: type = SCTPChunkType.shutdownAck
        case .error(let causes): type = SCTPChunkType.error; body.write(causes)
        case .cookieEcho(let cookie): type = SCTPChunkType.cookieEcho; body.write(cookie)
        case .cookieAck: type = SCTPChunkType.cookieAck
        case .shutdownComplete(let reflected): type = SCTPChunkType.shutdownComplete; flags = reflected ? 1 : 0
        case .forwardTSN(let tsn, let streams):
            type = SCTPChunkType.forwardTSN
            body.write(tsn)
            for entry in streams { body.write(entry.stream); body.write(entry.sequence) }
        case .reconfig(let parameters):
            type = SCTPChunkType.reconfig
            writeParameters(parameters.map { parameter -> SCTPParameter in
                var value = ByteWriter(capacity: 16)
                switch parameter {
                case .outgoingReset(let request, let response, let last, let streams):
                    value.write(request); value.write(response); value.write(last)
                    for stream in streams { value.write(stream) }
                    return SCTPParameter(type: SCTPParameter.outgoingResetRequest, value: value.bytes)
                case .incomingReset(let request, let streams):
                    value.write(request)
                    for stream in streams { value.write(stream) }
                    return SCTPParameter(type: SCTPParameter.incomingResetRequest, value: value.bytes)
                case .response(let response, let result):
                    value.write(response); value.write(result)
                    return SCTPParameter(type: SCTPParameter.reconfigResponse, value: value.bytes)
                case .other(let other):
                    return other
                }
            })
        case .unknown(let unknownType, let unknownFlags, let value):
            type = unknownType; flags = unknownFlags; body.write(value)
        }
        writer.write(type)
        writer.write(flags)
        writer.write(UInt16(body.count + 4))
        writer.write(body.bytes)
        writer.write(zeros: (4 - body.count % 4) % 4)
    }
}
