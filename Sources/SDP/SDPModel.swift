/// An attribute line `a=name[:value]`, with its line number in the parsed text (1-based; 0 when built locally).
public struct SDPAttribute: Equatable, Sendable {
    public var name: String
    public var value: String?
    public var line: Int

    public init(_ name: String, _ value: String? = nil, line: Int = 0) {
        self.name = name
        self.value = value
        self.line = line
    }
}

/// `o=` line.
public struct SDPOrigin: Equatable, Sendable {
    public var username: String
    public var sessionID: String
    public var sessionVersion: String
    public var networkType: String
    public var addressType: String
    public var address: String

    public init(username: String = "-", sessionID: String, sessionVersion: String, networkType: String = "IN",
                addressType: String = "IP4", address: String = "127.0.0.1") {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.networkType = networkType
        self.addressType = addressType
        self.address = address
    }
}

/// One `m=` section.
public struct MediaDescription: Equatable, Sendable {
    public var kind: String  // audio, video, application
    public var port: Int
    public var portCount: Int?
    public var proto: String
    public var formats: [String]
    public var connection: String?
    public var bandwidths: [String]
    public var attributes: [SDPAttribute]
    /// Line number of the `m=` line (1-based; 0 when built locally).
    public var line: Int

    public init(kind: String, port: Int, proto: String, formats: [String], connection: String? = "IN IP4 0.0.0.0",
                attributes: [SDPAttribute] = [], line: Int = 0) {
        self.kind = kind
        self.port = port
        self.portCount = nil
        self.proto = proto
        self.formats = formats
        self.connection = connection
        self.bandwidths = []
        self.attributes = attributes
        self.line = line
    }
}

/// A whole session description (RFC 8866), as offered by Sora or answered by recbot.
public struct SessionDescription: Equatable, Sendable {
    public var origin: SDPOrigin
    public var sessionName: String
    public var connection: String?
    public var timing: String
    public var attributes: [SDPAttribute]
    public var media: [MediaDescription]

    public init(origin: SDPOrigin, sessionName: String = "-", timing: String = "0 0", attributes: [SDPAttribute] = [],
                media: [MediaDescription] = []) {
        self.origin = origin
        self.sessionName = sessionName
        self.connection = nil
        self.timing = timing
        self.attributes = attributes
        self.media = media
    }
}

public enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The text could not be parsed; `line` is 1-based.
    case malformedLine(line: Int, text: String, reason: String)
    case tooLarge(reason: String)
    case missing(String, line: Int?)
    /// The offer is valid SDP but recbot cannot answer it.
    case unsupportedOffer(line: Int?, reason: String)

    public var description: String {
        switch self {
        case .malformedLine(let line, let text, let reason): "SDP line \(line) (\(text.prefix(80))): \(reason)"
        case .tooLarge(let reason): "SDP too large: \(reason)"
        case .missing(let what, let line): "SDP is missing \(what)" + (line.map { " (section at line \($0))" } ?? "")
        case .unsupportedOffer(let line, let reason): "cannot answer the offer" + (line.map { " at line \($0)" } ?? "") + ": \(reason)"
        }
    }
}
