/// Parses SDP text from the network: bounded in size, line count and section count;
/// every error names the offending line.
extension SessionDescription {
    public static let maximumBytes = 4 << 20
    public static let maximumLines = 160_000
    public static let maximumMediaSections = 4_096

    public init(parsing text: String) throws(SDPError) {
        guard text.utf8.count <= SessionDescription.maximumBytes else {
            throw .tooLarge(reason: "\(text.utf8.count) bytes (limit \(SessionDescription.maximumBytes))")
        }
        var origin: SDPOrigin?
        var sessionName: String?
        var sessionConnection: String?
        var timing: String?
        var sessionAttributes: [SDPAttribute] = []
        var media: [MediaDescription] = []
        var sawVersion = false

        var lineNumber = 0
        // "\r\n" is a single Character in Swift: split on newline characters, not on "\n".
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            guard lineNumber <= SessionDescription.maximumLines else {
                throw .tooLarge(reason: "more than \(SessionDescription.maximumLines) lines")
            }
            let line = Substring(rawLine)
            if line.isEmpty { continue }
            let text = String(line)
            guard line.count >= 2, line[line.index(after: line.startIndex)] == "=" else {
                throw .malformedLine(line: lineNumber, text: text, reason: "expected <type>=<value>")
            }
            let type = line.first!
            let value = String(line.dropFirst(2))
            if !sawVersion {
                guard type == "v", value == "0" else { throw .malformedLine(line: lineNumber, text: text, reason: "SDP must start with v=0") }
                sawVersion = true
                continue
            }
            switch type {
            case "o":
                let parts = value.split(separator: " ").map(String.init)
                guard parts.count == 6 else { throw .malformedLine(line: lineNumber, text: text, reason: "o= needs 6 fields") }
                origin = SDPOrigin(username: parts[0], sessionID: parts[1], sessionVersion: parts[2], networkType: parts[3],
                                   addressType: parts[4], address: parts[5])
            case "s":
                sessionName = value
            case "t":
                timing = value
            case "c":
                if media.isEmpty { sessionConnection = value } else { media[media.count - 1].connection = value }
            case "b":
                if !media.isEmpty { media[media.count - 1].bandwidths.append(value) }
            case "m":
                guard media.count < SessionDescription.maximumMediaSections else {
                    throw .tooLarge(reason: "more than \(SessionDescription.maximumMediaSections) media sections")
                }
                media.append(try MediaDescription(mLine: value, lineNumber: lineNumber, text: text))
            case "a":
                let attribute = SessionDescription.attribute(value, line: lineNumber)
                if media.isEmpty { sessionAttributes.append(attribute) } else { media[media.count - 1].attributes.append(attribute) }
            case "i", "u", "e", "p", "r", "z", "k":
                continue  // informational lines recbot has no use for
            default:
                throw .malformedLine(line: lineNumber, text: text, reason: "unknown line type '\(type)'")
            }
        }
        guard sawVersion else { throw .missing("v=0", line: nil) }
        guard let origin else { throw .missing("o= line", line: nil) }
        self.init(origin: origin, sessionName: sessionName ?? "-", timing: timing ?? "0 0", attributes: sessionAttributes, media: media)
        self.connection = sessionConnection
    }

    static func attribute(_ value: String, line: Int) -> SDPAttribute {
        guard let colon = value.firstIndex(of: ":") else { return SDPAttribute(value, nil, line: line) }
        return SDPAttribute(String(value[..<colon]), String(value[value.index(after: colon)...]), line: line)
    }
}

extension MediaDescription {
    init(mLine value: String, lineNumber: Int, text: String) throws(SDPError) {
        let parts = value.split(separator: " ").map(String.init)
        guard parts.count >= 3 else { throw .malformedLine(line: lineNumber, text: text, reason: "m= needs media, port and proto") }
        let portParts = parts[1].split(separator: "/", omittingEmptySubsequences: false)
        guard let port = Int(portParts[0]), (0...65_535).contains(port) else {
            throw .malformedLine(line: lineNumber, text: text, reason: "bad port '\(parts[1])'")
        }
        self.init(kind: parts[0], port: port, proto: parts[2], formats: Array(parts.dropFirst(3)), connection: nil, line: lineNumber)
        if portParts.count == 2 {
            guard let count = Int(portParts[1]), count > 0 else {
                throw .malformedLine(line: lineNumber, text: text, reason: "bad port count '\(parts[1])'")
            }
            portCount = count
        }
    }
}

extension SessionDescription {
    /// SDP text with CRLF line endings.
    public var serialized: String {
        var lines = ["v=0"]
        lines.append("o=\(origin.username) \(origin.sessionID) \(origin.sessionVersion) \(origin.networkType) \(origin.addressType) \(origin.address)")
        lines.append("s=\(sessionName)")
        if let connection { lines.append("c=\(connection)") }
        lines.append("t=\(timing)")
        lines += attributes.map(\.serialized)
        for section in media {
            let port = section.portCount.map { "\(section.port)/\($0)" } ?? "\(section.port)"
            lines.append((["m=\(section.kind)", port, section.proto] + section.formats).joined(separator: " "))
            if let connection = section.connection { lines.append("c=\(connection)") }
            lines += section.bandwidths.map { "b=\($0)" }
            lines += section.attributes.map(\.serialized)
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}

extension SDPAttribute {
    var serialized: String { value.map { "a=\(name):\($0)" } ?? "a=\(name)" }
}
