/// `a=rtpmap:<pt> <encoding>/<clock>[/<channels>]`
public struct RTPMap: Equatable, Sendable {
    public var payloadType: UInt8
    public var encoding: String
    public var clockRate: Int
    public var channels: Int?
}

/// `a=extmap:<id>[/<direction>] <uri> [<attributes>]`
public struct HeaderExtensionMap: Equatable, Sendable {
    public var id: Int
    public var uri: String
}

/// `a=ssrc:<ssrc> <attribute>[:<value>]`
public struct SSRCAttribute: Equatable, Sendable {
    public var ssrc: UInt32
    public var name: String
    public var value: String?
}

public enum MediaDirection: String, Sendable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive
}

/// Typed views of a media section's attributes. Malformed values read as absent;
/// the answer builder reports what it needs and cannot find.
extension MediaDescription {
    public func attributes(named name: String) -> [SDPAttribute] { attributes.filter { $0.name == name } }
    public func attribute(named name: String) -> SDPAttribute? { attributes.first { $0.name == name } }
    public func has(_ name: String) -> Bool { attribute(named: name) != nil }

    public var mid: String? { attribute(named: "mid")?.value }

    public var direction: MediaDirection {
        for attribute in attributes {
            if let direction = MediaDirection(rawValue: attribute.name), attribute.value == nil { return direction }
        }
        return .sendrecv
    }

    public var rtpMaps: [RTPMap] {
        attributes(named: "rtpmap").compactMap { attribute in
            guard let value = attribute.value else { return nil }
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let pt = UInt8(parts[0]), pt < 128 else { return nil }
            let codec = parts[1].split(separator: "/")
            guard codec.count >= 2, let clock = Int(codec[1]), clock > 0 else { return nil }
            let channels = codec.count >= 3 ? Int(codec[2]) : nil
            return RTPMap(payloadType: pt, encoding: String(codec[0]), clockRate: clock, channels: channels)
        }
    }

    /// fmtp parameters by payload type, as the raw parameter string.
    public func formatParameters(_ payloadType: UInt8) -> String? {
        for attribute in attributes(named: "fmtp") {
            guard let value = attribute.value else { continue }
            let parts = value.split(separator: " ", maxSplits: 1)
            if parts.count == 2, UInt8(parts[0]) == payloadType { return String(parts[1]) }
        }
        return nil
    }

    public func rtcpFeedback(_ payloadType: UInt8) -> [String] {
        attributes(named: "rtcp-fb").compactMap { attribute in
            guard let value = attribute.value else { return nil }
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0] == "*" || UInt8(parts[0]) == payloadType else { return nil }
            return String(parts[1])
        }
    }

    public var headerExtensions: [HeaderExtensionMap] {
        attributes(named: "extmap").compactMap { attribute in
            guard let value = attribute.value else { return nil }
            let parts = value.split(separator: " ")
            // `a=extmap:/ x` splits into nothing: `.first`, never `[0]`.
            guard parts.count >= 2, let idText = parts[0].split(separator: "/").first, let id = Int(idText), (1...255).contains(id) else { return nil }
            return HeaderExtensionMap(id: id, uri: String(parts[1]))
        }
    }

    public var ssrcAttributes: [SSRCAttribute] {
        attributes(named: "ssrc").compactMap { attribute in
            guard let value = attribute.value else { return nil }
            let parts = value.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let ssrc = UInt32(parts[0]) else { return nil }
            // `a=ssrc:1 :` leaves no name: such an attribute means nothing and is skipped.
            let pair = parts[1].split(separator: ":", maxSplits: 1)
            guard let name = pair.first else { return nil }
            return SSRCAttribute(ssrc: ssrc, name: String(name), value: pair.count == 2 ? String(pair[1]) : nil)
        }
    }

    /// `a=ssrc-group:<semantics> <ssrc>...`
    public var ssrcGroups: [(semantics: String, ssrcs: [UInt32])] {
        attributes(named: "ssrc-group").compactMap { attribute in
            guard let value = attribute.value else { return nil }
            let parts = value.split(separator: " ")
            guard parts.count >= 2 else { return nil }
            let ssrcs = parts.dropFirst().compactMap { UInt32($0) }
            guard ssrcs.count == parts.count - 1 else { return nil }
            return (String(parts[0]), ssrcs)
        }
    }

    /// `a=msid:<stream id> [<track id>]`, falling back to `a=ssrc:<n> msid:`.
    public var msid: (stream: String, track: String?)? {
        if let value = attribute(named: "msid")?.value {
            let parts = value.split(separator: " ", maxSplits: 1).map(String.init)
            if let stream = parts.first { return (stream, parts.count > 1 ? parts[1] : nil) }
        }
        if let value = ssrcAttributes.first(where: { $0.name == "msid" })?.value {
            let parts = value.split(separator: " ", maxSplits: 1).map(String.init)
            if let stream = parts.first { return (stream, parts.count > 1 ? parts[1] : nil) }
        }
        return nil
    }

    /// `a=rid:<id> <direction> ...`
    public var rids: [(id: String, direction: String)] {
        attributes(named: "rid").compactMap { attribute in
            let parts = attribute.value?.split(separator: " ") ?? []
            guard parts.count >= 2 else { return nil }
            return (String(parts[0]), String(parts[1]))
        }
    }

    /// `a=simulcast:<send|recv> <rid>;<rid>...` (RFC 8853), as direction and rid alternatives.
    public var simulcast: (direction: String, streams: [[String]])? {
        guard let value = attribute(named: "simulcast")?.value else { return nil }
        let parts = value.split(separator: " ")
        guard parts.count >= 2 else { return nil }
        let streams = parts[1].split(separator: ";").map { $0.split(separator: ",").map { String($0.drop { $0 == "~" }) } }
        return (String(parts[0]), streams)
    }

    public var sctpPort: Int? { attribute(named: "sctp-port")?.value.flatMap { Int($0) } }
    public var maxMessageSize: Int? { attribute(named: "max-message-size")?.value.flatMap { Int($0) } }
}

/// Session-level or media-level ICE/DTLS parameters; media-level wins (RFC 8839 §5.4).
extension SessionDescription {
    public func value(_ name: String, in section: MediaDescription) -> SDPAttribute? {
        section.attribute(named: name) ?? attributes.first { $0.name == name }
    }

    public var bundleGroups: [[String]] {
        attributes.filter { $0.name == "group" }.compactMap { attribute in
            let parts = attribute.value?.split(separator: " ").map(String.init) ?? []
            guard parts.first == "BUNDLE" else { return nil }
            return Array(parts.dropFirst())
        }
    }

    public var isICELite: Bool { attributes.contains { $0.name == "ice-lite" } }
}
