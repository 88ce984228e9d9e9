import ICE
import Keying

/// What recbot can receive. Only what is actually implemented goes into an answer.
public struct ReceiverCapabilities: Sendable {
    public static let midExtension = "urn:ietf:params:rtp-hdrext:sdes:mid"
    public static let ridExtension = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"
    public static let repairedRidExtension = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"
    /// Coordination of video orientation (3GPP TS 26.114): phones turn pictures by this tag, not by pixels.
    public static let videoOrientationExtension = "urn:3gpp:video-orientation"

    /// Video encodings (rtpmap names, case-insensitive) recbot records.
    public var videoCodecs: Set<String> = ["VP8", "VP9", "AV1", "H264"]
    public var audioCodecs: Set<String> = ["OPUS"]
    public var acceptsRetransmission = true
    /// rtcp-fb values (e.g. "nack", "nack pli") the receiver acts on.
    public var rtcpFeedback: Set<String> = []
    /// Header extension URIs the RTP demultiplexer reads.
    public var headerExtensions: Set<String> = [midExtension, ridExtension, repairedRidExtension, videoOrientationExtension]
    public var acceptsDataChannels = false
    /// Answer `a=rtcp-rsize` where offered (RFC 5506): feedback may then go out alone.
    public var acceptsReducedSizeRTCP = true
    public var maxMessageSize = 262_144

    public init() {}
}

/// recbot's side of the transport, put into the answer.
public struct LocalTransportParameters: Sendable {
    public var iceUfrag: String
    public var icePwd: String
    public var fingerprint: DTLSFingerprint
    /// Candidates to include (non-trickle); trickled ones go over signaling instead.
    public var candidates: [ICECandidate]
    public var endOfCandidates: Bool
    public var sessionID: String
    public var sessionVersion: Int

    public init(iceUfrag: String, icePwd: String, fingerprint: DTLSFingerprint, candidates: [ICECandidate] = [],
                endOfCandidates: Bool = false, sessionID: String, sessionVersion: Int = 1) {
        self.iceUfrag = iceUfrag
        self.icePwd = icePwd
        self.fingerprint = fingerprint
        self.candidates = candidates
        self.endOfCandidates = endOfCandidates
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
    }
}

/// The offerer's transport, taken from the BUNDLE-tagged section.
public struct RemoteTransportParameters: Equatable, Sendable {
    public var iceUfrag: String
    public var icePwd: String
    public var iceLite: Bool
    public var candidates: [ICECandidate]
    public var endOfCandidates: Bool
    public var fingerprints: [DTLSFingerprint]
}

public struct NegotiatedCodec: Equatable, Sendable {
    public var payloadType: UInt8
    /// Upper-cased rtpmap encoding name: VP8, VP9, AV1, H264, OPUS.
    public var name: String
    public var clockRate: Int
    public var channels: Int?
    public var formatParameters: String?
    /// The RTX payload type that retransmits this codec, when negotiated.
    public var rtxPayloadType: UInt8?
    public var rtcpFeedback: [String]
}

/// One media section as negotiated: what the receiver must expect on it.
public struct NegotiatedMedia: Equatable, Sendable {
    public enum Kind: String, Sendable { case audio, video, application }

    public var index: Int
    public var mid: String?
    public var kind: Kind?
    public var accepted: Bool
    /// Accepted and the offerer sends on it (sendonly/sendrecv); inactive sections keep codecs but carry nothing.
    public var receiving: Bool
    /// Why a section was rejected (port 0), for logs.
    public var rejectionReason: String?
    /// A media section rejected for its codecs: the codecs it offered (e.g. H265).
    public var refusedCodecs: [String] = []
    public var codecs: [NegotiatedCodec]
    public var headerExtensions: [HeaderExtensionMap]
    /// The sender's stream id: Sora puts the publisher's connection id here.
    public var msidStream: String?
    public var msidTrack: String?
    public var ssrcs: [UInt32]
    /// FID groups: primary SSRC → its retransmission SSRC.
    public var rtxSSRCs: [UInt32: UInt32]
    public var rids: [String]
    public var sctpPort: Int?
    public var maxMessageSize: Int?
    /// Both sides agreed to reduced-size RTCP for this section.
    public var reducedSizeRTCP = false
}

public struct RecvOnlyAnswer: Sendable {
    public var sdp: SessionDescription
    public var media: [NegotiatedMedia]
    public var remote: RemoteTransportParameters
}

/// Builds recbot's recvonly answer to a (Sora) offer: JSEP-style, one BUNDLE transport,
/// rtcp-mux, DTLS client (`a=setup:active`). What cannot be received is rejected with port 0;
/// an offer that cannot be answered at all is a typed error naming the line.
public enum RecvOnlyAnswerBuilder {
    static let rtpProfiles: Set<String> = ["UDP/TLS/RTP/SAVPF", "UDP/TLS/RTP/SAVP", "RTP/SAVPF"]
    static let sctpProfiles: Set<String> = ["UDP/DTLS/SCTP", "DTLS/SCTP"]

    public static func answer(to offer: SessionDescription, local: LocalTransportParameters,
                              capabilities: ReceiverCapabilities = ReceiverCapabilities()) throws(SDPError) -> RecvOnlyAnswer {
        try validateMids(offer)
        let bundle = offer.bundleGroups.first ?? []
        var negotiated: [NegotiatedMedia] = []
        var sections: [MediaDescription] = []
        for (index, section) in offer.media.enumerated() {
            var media = negotiate(section, index: index, capabilities: capabilities)
            if media.accepted, offer.media.count > 1 || !bundle.isEmpty, !bundle.contains(section.mid ?? "") {
                media = rejected(section, index: index, reason: "not in the BUNDLE group (recbot uses one transport)")
            }
            if media.accepted, media.kind != .application, !section.has("rtcp-mux") {
                throw .unsupportedOffer(line: section.line, reason: "m-section without a=rtcp-mux (recbot multiplexes RTP and RTCP)")
            }
            negotiated.append(media)
        }

        let acceptedIndices = negotiated.filter(\.accepted).map(\.index)
        // Transport parameters come from the first accepted section (the BUNDLE-tagged one).
        let remote: RemoteTransportParameters
        if let first = acceptedIndices.first {
            // Candidates belong to the shared transport, even when written in a section we reject.
            let transportSections = bundle.isEmpty ? [offer.media[first]] : offer.media.filter { bundle.contains($0.mid ?? "") }
            remote = try remoteTransport(offer, tagged: offer.media[first], bundled: transportSections)
        } else {
            remote = RemoteTransportParameters(iceUfrag: "", icePwd: "", iceLite: offer.isICELite, candidates: [], endOfCandidates: false, fingerprints: [])
        }

        for (index, section) in offer.media.enumerated() {
            sections.append(answerSection(section, negotiated: negotiated[index], local: local, capabilities: capabilities,
                                          isFirstAccepted: index == acceptedIndices.first))
        }
        var attributes: [SDPAttribute] = []
        let acceptedMids = acceptedIndices.compactMap { negotiated[$0].mid }
        if !acceptedMids.isEmpty { attributes.append(SDPAttribute("group", (["BUNDLE"] + acceptedMids).joined(separator: " "))) }
        let sdp = SessionDescription(
            origin: SDPOrigin(sessionID: local.sessionID, sessionVersion: String(local.sessionVersion)),
            attributes: attributes, media: sections)
        return RecvOnlyAnswer(sdp: sdp, media: negotiated, remote: remote)
    }

    // MARK: - Per section

    static func negotiate(_ section: MediaDescription, index: Int, capabilities: ReceiverCapabilities) -> NegotiatedMedia {
        let isBundleOnly = section.has("bundle-only")
        if section.port == 0 && !isBundleOnly { return rejected(section, index: index, reason: "rejected by the offerer (port 0)") }
        var media = rejected(section, index: index, reason: nil)
        media.msidStream = section.msid?.stream
        media.msidTrack = section.msid?.track
        media.rids = section.rids.map(\.id)
        media.ssrcs = Array(Set(section.ssrcAttributes.map(\.ssrc))).sorted()
        for group in section.ssrcGroups where group.semantics == "FID" && group.ssrcs.count == 2 {
            media.rtxSSRCs[group.ssrcs[0]] = group.ssrcs[1]
        }

        switch section.kind {
        case "audio", "video":
            media.kind = section.kind == "audio" ? .audio : .video
            guard rtpProfiles.contains(section.proto) else {
                media.rejectionReason = "unsupported transport \(section.proto)"
                return media
            }
            let wanted = section.kind == "audio" ? capabilities.audioCodecs : capabilities.videoCodecs
            let maps = section.rtpMaps.filter { section.formats.contains(String($0.payloadType)) }
            var codecs: [NegotiatedCodec] = []
            for map in maps where wanted.contains(map.encoding.uppercased()) {
                let parameters = section.formatParameters(map.payloadType)
                if map.encoding.uppercased() == "H264", !acceptsH264(parameters) { continue }
                if map.encoding.uppercased() == "OPUS", map.clockRate != 48_000 { continue }
                let feedback = section.rtcpFeedback(map.payloadType).filter { capabilities.rtcpFeedback.contains($0) }
                codecs.append(NegotiatedCodec(payloadType: map.payloadType, name: map.encoding.uppercased(), clockRate: map.clockRate,
                                              channels: map.channels, formatParameters: parameters, rtxPayloadType: nil,
                                              rtcpFeedback: feedback))
            }
            if capabilities.acceptsRetransmission {
                for map in maps where map.encoding.lowercased() == "rtx" {
                    guard let apt = aptPayloadType(section.formatParameters(map.payloadType)),
                          let codecIndex = codecs.firstIndex(where: { $0.payloadType == apt }) else { continue }
                    codecs[codecIndex].rtxPayloadType = map.payloadType
                }
            }
            guard !codecs.isEmpty else {
                let auxiliary: Set<String> = ["RTX", "RED", "ULPFEC", "FLEXFEC-03"]
                media.refusedCodecs = maps.map { $0.encoding.uppercased() }.filter { !auxiliary.contains($0) }
                    .reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
                media.rejectionReason = "no \(section.kind) codec recbot records (offered: \(maps.map(\.encoding).joined(separator: ", ")))"
                return media
            }
            media.codecs = codecs
            media.headerExtensions = section.headerExtensions.filter { capabilities.headerExtensions.contains($0.uri) }
            media.reducedSizeRTCP = capabilities.acceptsReducedSizeRTCP && section.has("rtcp-rsize")
            media.accepted = true
            // Inactive (e.g. its sender left): answered with codecs so the section stays valid, but nothing flows.
            media.receiving = section.direction == .sendonly || section.direction == .sendrecv
        case "application":
            media.kind = .application
            guard capabilities.acceptsDataChannels, sctpProfiles.contains(section.proto),
                  section.formats.contains("webrtc-datachannel") || section.proto == "DTLS/SCTP" else {
                media.rejectionReason = capabilities.acceptsDataChannels ? "unsupported application section" : "data channels are not enabled"
                return media
            }
            media.sctpPort = section.sctpPort ?? 5000
            media.maxMessageSize = section.maxMessageSize ?? 65_536
            media.accepted = true
            media.receiving = true
        default:
            media.rejectionReason = "unsupported media '\(section.kind)'"
        }
        return media
    }

    static func rejected(_ section: MediaDescription, index: Int, reason: String?) -> NegotiatedMedia {
        NegotiatedMedia(index: index, mid: section.mid, kind: NegotiatedMedia.Kind(rawValue: section.kind), accepted: false,
                        receiving: false, rejectionReason: reason, codecs: [], headerExtensions: [], msidStream: nil, msidTrack: nil, ssrcs: [],
                        rtxSSRCs: [:], rids: [], sctpPort: nil, maxMessageSize: nil)
    }

    /// H.264 packetization modes 0 and 1 (single NAL, STAP-A, FU-A) are depacketized; mode 2 is not.
    static func acceptsH264(_ parameters: String?) -> Bool {
        let values = formatParameterDictionary(parameters)
        if let mode = values["packetization-mode"], mode != "0" && mode != "1" { return false }
        if let profile = values["profile-level-id"] {
            guard profile.count == 6, UInt32(profile, radix: 16) != nil else { return false }
        }
        return true
    }

    static func aptPayloadType(_ parameters: String?) -> UInt8? {
        formatParameterDictionary(parameters)["apt"].flatMap { UInt8($0) }
    }

    static func formatParameterDictionary(_ parameters: String?) -> [String: String] {
        var result: [String: String] = [:]
        for pair in (parameters ?? "").split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard let name = parts.first else { continue }  // a bare "=" names nothing
            let key = name.trimmingCharacters(in: " ").lowercased()
            result[key] = parts.count == 2 ? parts[1].trimmingCharacters(in: " ") : ""
        }
        return result
    }

    // MARK: - Transport

    static func validateMids(_ offer: SessionDescription) throws(SDPError) {
        var seen: Set<String> = []
        for section in offer.media {
            guard let mid = section.mid else {
                if offer.media.count > 1 { throw .missing("a=mid", line: section.line) }
                continue
            }
            guard !mid.isEmpty, mid.utf8.count <= 32, seen.insert(mid).inserted else {
                throw .unsupportedOffer(line: section.attribute(named: "mid")?.line ?? section.line, reason: "empty, over-long or duplicate mid '\(mid)'")
            }
        }
    }

    static func remoteTransport(_ offer: SessionDescription, tagged: MediaDescription,
                                bundled: [MediaDescription]) throws(SDPError) -> RemoteTransportParameters {
        guard let ufragAttribute = offer.value("ice-ufrag", in: tagged), let ufrag = ufragAttribute.value else {
            throw .missing("a=ice-ufrag", line: tagged.line)
        }
        guard let pwdAttribute = offer.value("ice-pwd", in: tagged), let pwd = pwdAttribute.value else {
            throw .missing("a=ice-pwd", line: tagged.line)
        }
        // RFC 8839 §5.4: ufrag 4-256 and pwd 22-256 ice-chars.
        guard (4...256).contains(ufrag.count), ufrag.allSatisfy(isICEChar) else {
            throw .unsupportedOffer(line: ufragAttribute.line, reason: "invalid ice-ufrag")
        }
        guard (22...256).contains(pwd.count), pwd.allSatisfy(isICEChar) else {
            throw .unsupportedOffer(line: pwdAttribute.line, reason: "invalid ice-pwd")
        }
        let fingerprintAttributes = tagged.attributes(named: "fingerprint").isEmpty
            ? offer.attributes.filter { $0.name == "fingerprint" } : tagged.attributes(named: "fingerprint")
        guard !fingerprintAttributes.isEmpty else { throw .missing("a=fingerprint", line: tagged.line) }
        var fingerprints: [DTLSFingerprint] = []
        for attribute in fingerprintAttributes {
            guard let fingerprint = DTLSFingerprint(sdp: attribute.value ?? "") else {
                throw .malformedLine(line: attribute.line, text: "a=fingerprint:\(attribute.value ?? "")",
                                     reason: "unknown hash or malformed fingerprint")
            }
            fingerprints.append(fingerprint)
        }
        if let setup = offer.value("setup", in: tagged) {
            switch setup.value {
            case "actpass", "passive": break
            case "active": throw .unsupportedOffer(line: setup.line, reason: "a=setup:active would make recbot the DTLS server")
            default: throw .malformedLine(line: setup.line, text: "a=setup:\(setup.value ?? "")", reason: "unknown setup role")
            }
        }
        var candidates: [ICECandidate] = []
        var endOfCandidates = offer.attributes.contains { $0.name == "end-of-candidates" }
        for section in bundled {
            for attribute in section.attributes(named: "candidate") {
                // Unparsable candidates are skipped, not fatal: others may still work.
                if let candidate = ICECandidate(sdp: attribute.value ?? ""), candidate.component == 1, !candidates.contains(candidate) {
                    candidates.append(candidate)
                }
            }
            if section.has("end-of-candidates") { endOfCandidates = true }
        }
        return RemoteTransportParameters(iceUfrag: ufrag, icePwd: pwd, iceLite: offer.isICELite, candidates: candidates,
                                         endOfCandidates: endOfCandidates, fingerprints: fingerprints)
    }

    static func isICEChar(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "+" || character == "/")
    }

    // MARK: - Answer text

    static func answerSection(_ offered: MediaDescription, negotiated: NegotiatedMedia, local: LocalTransportParameters,
                              capabilities: ReceiverCapabilities, isFirstAccepted: Bool) -> MediaDescription {
        guard negotiated.accepted else {
            var section = MediaDescription(kind: offered.kind, port: 0, proto: offered.proto, formats: offered.formats)
            if let mid = offered.mid { section.attributes.append(SDPAttribute("mid", mid)) }
            section.attributes.append(SDPAttribute("inactive"))
            return section
        }
        var formats: [String] = []
        var attributes: [SDPAttribute] = []
        if let mid = negotiated.mid { attributes.append(SDPAttribute("mid", mid)) }
        attributes += [
            SDPAttribute("ice-ufrag", local.iceUfrag), SDPAttribute("ice-pwd", local.icePwd), SDPAttribute("ice-options", "trickle"),
            SDPAttribute("fingerprint", local.fingerprint.sdp), SDPAttribute("setup", "active"),
        ]
        if negotiated.kind == .application {
            formats = offered.formats
            attributes.append(SDPAttribute("sctp-port", String(negotiated.sctpPort ?? 5000)))
            attributes.append(SDPAttribute("max-message-size", String(capabilities.maxMessageSize)))
        } else {
            attributes.append(SDPAttribute(negotiated.receiving ? "recvonly" : "inactive"))
            attributes.append(SDPAttribute("rtcp-mux"))
            if negotiated.reducedSizeRTCP { attributes.append(SDPAttribute("rtcp-rsize")) }
            for extensionMap in negotiated.headerExtensions {
                attributes.append(SDPAttribute("extmap", "\(extensionMap.id) \(extensionMap.uri)"))
            }
            for codec in negotiated.codecs {
                formats.append(String(codec.payloadType))
                let channels = codec.channels.map { "/\($0)" } ?? ""
                let encoding = offered.rtpMaps.first { $0.payloadType == codec.payloadType }?.encoding ?? codec.name
                attributes.append(SDPAttribute("rtpmap", "\(codec.payloadType) \(encoding)/\(codec.clockRate)\(channels)"))
                if let parameters = codec.formatParameters { attributes.append(SDPAttribute("fmtp", "\(codec.payloadType) \(parameters)")) }
                for feedback in codec.rtcpFeedback { attributes.append(SDPAttribute("rtcp-fb", "\(codec.payloadType) \(feedback)")) }
                if let rtx = codec.rtxPayloadType {
                    formats.append(String(rtx))
                    attributes.append(SDPAttribute("rtpmap", "\(rtx) rtx/\(codec.clockRate)"))
                    attributes.append(SDPAttribute("fmtp", "\(rtx) apt=\(codec.payloadType)"))
                }
            }
        }
        if isFirstAccepted {
            attributes += local.candidates.map { SDPAttribute("candidate", String($0.sdp.dropFirst("candidate:".count))) }
            if local.endOfCandidates { attributes.append(SDPAttribute("end-of-candidates")) }
        }
        return MediaDescription(kind: offered.kind, port: 9, proto: offered.proto, formats: formats, attributes: attributes)
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        var slice = self
        while slice.first == set { slice = slice.dropFirst() }
        while slice.last == set { slice = slice.dropLast() }
        return String(slice)
    }
}
