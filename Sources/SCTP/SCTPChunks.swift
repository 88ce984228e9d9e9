import WireCoding

/// Chunk types recbot's SCTP understands (RFC 9260 §3.2, RFC 3758, RFC 6525).
public enum SCTPChunkType {
    public static let data: UInt8 = 0
    public static let initiation: UInt8 = 1
    public static let initiationAck: UInt8 = 2
    public static let selectiveAck: UInt8 = 3
    public static let heartbeat: UInt8 = 4
    public static let heartbeatAck: UInt8 = 5
    public static let abort: UInt8 = 6
    public static let shutdown: UInt8 = 7
    public static let shutdownAck: UInt8 = 8
    public static let error: UInt8 = 9
    public static let cookieEcho: UInt8 = 10
    public static let cookieAck: UInt8 = 11
    public static let shutdownComplete: UInt8 = 14
    public static let reconfig: UInt8 = 130
    public static let forwardTSN: UInt8 = 192
}

/// One DATA chunk (RFC 9260 §3.3.1).
public struct SCTPData: Equatable, Sendable {
    public var tsn: UInt32
    public var streamID: UInt16
    public var streamSequence: UInt16
    public var payloadProtocol: UInt32
    public var unordered: Bool
    public var beginning: Bool
    public var ending: Bool
    public var immediate: Bool
    public var userData: [UInt8]

    public init(tsn: UInt32, streamID: UInt16, streamSequence: UInt16, payloadProtocol: UInt32, unordered: Bool = false,
                beginning: Bool = true, ending: Bool = true, immediate: Bool = false, userData: [UInt8]) {
        self.tsn = tsn
        self.streamID = streamID
        self.streamSequence = streamSequence
        self.payloadProtocol = payloadProtocol
        self.unordered = unordered
        self.beginning = beginning
        self.ending = ending
        self.immediate = immediate
        self.userData = userData
    }
}

/// INIT and INIT-ACK (RFC 9260 §3.3.2-3).
public struct SCTPInit: Equatable, Sendable {
    public var initiateTag: UInt32
    public var advertisedReceiverWindow: UInt32
    public var outboundStreams: UInt16
    public var inboundStreams: UInt16
    public var initialTSN: UInt32
    /// Optional parameters as (type, value); the state cookie (7) rides here in INIT-ACK.
    public var parameters: [SCTPParameter]

    public init(initiateTag: UInt32, advertisedReceiverWindow: UInt32, outboundStreams: UInt16, inboundStreams: UInt16,
                initialTSN: UInt32, parameters: [SCTPParameter] = []) {
        self.initiateTag = initiateTag
        self.advertisedReceiverWindow = advertisedReceiverWindow
        self.outboundStreams = outboundStreams
        self.inboundStreams = inboundStreams
        self.initialTSN = initialTSN
        self.parameters = parameters
    }

    public var stateCookie: [UInt8]? { parameters.first { $0.type == SCTPParameter.stateCookie }?.value }
    /// Whether the peer supports partial reliability (RFC 3758).
    public var supportsForwardTSN: Bool {
        parameters.contains { $0.type == SCTPParameter.forwardTSNSupported }
            || parameters.contains { $0.type == SCTPParameter.supportedExtensions && $0.value.contains(SCTPChunkType.forwardTSN) }
    }
}

public struct SCTPParameter: Equatable, Sendable {
    public static let heartbeatInfo: UInt16 = 1
    public static let stateCookie: UInt16 = 7
    public static let supportedExtensions: UInt16 = 0x8008
    public static let forwardTSNSupported: UInt16 = 0xC000
    public static let outgoingResetRequest: UInt16 = 13
    public static let incomingResetRequest: UInt16 = 14
    public static let reconfigResponse: UInt16 = 16

    public var type: UInt16
    public var value: [UInt8]

    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
    }
}

/// SACK (RFC 9260 §3.3.4): gap blocks are offsets from the cumulative TSN.
public struct SCTPSelectiveAck: Equatable, Sendable {
    public var cumulativeTSN: UInt32
    public var advertisedReceiverWindow: UInt32
    public var gapBlocks: [(start: UInt16, end: UInt16)]
    public var duplicateTSNs: [UInt32]

    public init(cumulativeTSN: UInt32, advertisedReceiverWindow: UInt32, gapBlocks: [(start: UInt16, end: UInt16)] = [], duplicateTSNs: [UInt32] = []) {
        self.cumulativeTSN = cumulativeTSN
        self.advertisedReceiverWindow = advertisedReceiverWindow
        self.gapBlocks = gapBlocks
        self.duplicateTSNs = duplicateTSNs
    }

    public static func == (lhs: SCTPSelectiveAck, rhs: SCTPSelectiveAck) -> Bool {
        lhs.cumulativeTSN == rhs.cumulativeTSN && lhs.advertisedReceiverWindow == rhs.advertisedReceiverWindow
            && lhs.gapBlocks.map { [$0.start, $0.end] } == rhs.gapBlocks.map { [$0.start, $0.end] } && lhs.duplicateTSNs == rhs.duplicateTSNs
    }
}

/// RE-CONFIG parameters (RFC 6525 §4) recbot handles.
public enum SCTPReconfigParameter: Equatable, Sendable {
    /// The sender will reset these outgoing streams (our incoming ones) after `lastTSN`.
    case outgoingReset(requestSequence: UInt32, responseSequence: UInt32, lastTSN: UInt32, streams: [UInt16])
    case incomingReset(requestSequence: UInt32, streams: [UInt16])
    case response(responseSequence: UInt32, result: UInt32)
    case other(SCTPParameter)
}

public enum SCTPChunk: Equatable, Sendable {
    case data(SCTPData)
    case initiation(SCTPInit)
    case initiationAck(SCTPInit)
    case selectiveAck(SCTPSelectiveAck)
    case heartbeat(info: [UInt8])
    case heartbeatAck(info: [UInt8])
    /// T bit: the verification tag is the sender's own (reflected).
    case abort(reflected: Bool, causes: [UInt8])
    case shutdown(cumulativeTSN: UInt32)
    case shutdownAck
    case error(causes: [UInt8])
    case cookieEcho(cookie: [UInt8])
    case cookieAck
    case shutdownComplete(reflected: Bool)
    case reconfig([SCTPReconfigParameter])
    case forwardTSN(newCumulativeTSN: UInt32, streams: [(stream: UInt16, sequence: UInt16)])
    /// Unknown type: the top two bits say what to do with it (RFC 9260 §3.2).
    case unknown(type: UInt8, flags: UInt8, value: [UInt8])

    public static func == (lhs: SCTPChunk, rhs: SCTPChunk) -> Bool {
        switch (lhs, rhs) {
        case (.forwardTSN(let a, let sa), .forwardTSN(let b, let sb)):
            return a == b && sa.map { [$0.stream, $0.sequence] } == sb.map { [$0.stream, $0.sequence] }
        case (.data(let a), .data(let b)): return a == b
        case (.initiation(let a), .initiation(let b)), (.initiationAck(let a), .initiationAck(let b)): return a == b
        case (.selectiveAck(let a), .selectiveAck(let b)): return a == b
        case (.heartbeat(let a), .heartbeat(let b)), (.heartbeatAck(let a), .heartbeatAck(let b)): return a == b
        case (.abort(let ra, let a), .abort(let rb, let b)): return ra == rb && a == b
        case (.shutdown(let a), .shutdown(let b)): return a == b
        case (.shutdownAck, .shutdownAck), (.cookieAck, .cookieAck): return true
        case (.error(let a), .error(let b)): return a == b
        case (.cookieEcho(let a), .cookieEcho(let b)): return a == b
        case (.shutdownComplete(let a), .shutdownComplete(let b)): return a == b
        case (.reconfig(let a), .reconfig(let b)): return a == b
        case (.unknown(let ta, let fa, let va), .unknown(let tb, let fb, let vb)): return ta == tb && fa == fb && va == vb
        default: return false
        }
    }
}
