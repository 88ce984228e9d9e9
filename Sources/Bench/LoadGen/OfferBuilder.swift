/// The transport half of the offer: one ICE-lite host candidate and one certificate for the
/// whole BUNDLE, as Sora sends it.
public struct OfferTransport: Sendable {
    public var iceUfrag: String
    public var icePwd: String
    /// `sha-256 AB:CD:…`
    public var fingerprint: String
    public var candidateAddress: String
    public var candidatePort: UInt16
}

/// Builds the offer Sora would send a recvonly client: per publisher an Opus and a VP8 (+RTX)
/// section, `sendonly`, its connection id as the msid stream id and its SSRCs announced.
/// Sections of publishers that left stay in place as `inactive` (their mids are never reused).
public enum OfferBuilder {
    public struct Section: Sendable {
        public enum Kind: Sendable { case audio, video }
        public var mid: Int
        public var kind: Kind
        public var connectionID: String
        public var ssrcs: SyntheticPublisher.SSRCs
        public var active: Bool
    }

    public static func offer(sessionVersion: Int, transport: OfferTransport, sections: [Section]) -> String {
        var lines = [
            "v=0",
            "o=- 4611731400430051336 \(sessionVersion) IN IP4 127.0.0.1",
            "s=-",
            "t=0 0",
            "a=group:BUNDLE " + sections.map { String($0.mid) }.joined(separator: " "),
            "a=msid-semantic: WMS *",
            "a=ice-lite",
        ]
        lines.reserveCapacity(8 + sections.count * 20)
        for section in sections { append(section, transport: transport, to: &lines) }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    private static func append(_ section: Section, transport: OfferTransport, to lines: inout [String]) {
        let isVideo = section.kind == .video
        let formats = isVideo ? "\(SyntheticPublisher.vp8PayloadType) \(SyntheticPublisher.rtxPayloadType)" : "\(SyntheticPublisher.opusPayloadType)"
        lines += [
            "m=\(isVideo ? "video" : "audio") 9 UDP/TLS/RTP/SAVPF \(formats)",
            "c=IN IP4 0.0.0.0",
            "a=rtcp:9 IN IP4 0.0.0.0",
            "a=ice-ufrag:\(transport.iceUfrag)",
            "a=ice-pwd:\(transport.icePwd)",
            "a=fingerprint:\(transport.fingerprint)",
            "a=setup:actpass",
            "a=mid:\(section.mid)",
            "a=rtcp-mux",
        ]
        if isVideo {
            let vp8 = SyntheticPublisher.vp8PayloadType, rtx = SyntheticPublisher.rtxPayloadType
            lines += ["a=rtpmap:\(vp8) VP8/90000", "a=rtcp-fb:\(vp8) nack", "a=rtcp-fb:\(vp8) nack pli", "a=rtcp-fb:\(vp8) ccm fir",
                      "a=rtpmap:\(rtx) rtx/90000", "a=fmtp:\(rtx) apt=\(vp8)"]
        } else {
            let opus = SyntheticPublisher.opusPayloadType
            lines += ["a=rtpmap:\(opus) opus/48000/2", "a=fmtp:\(opus) minptime=10;useinbandfec=1"]
        }
        guard section.active else {
            lines.append("a=inactive")
            return
        }
        let track = "\(section.connectionID)-\(isVideo ? "video" : "audio")"
        lines += ["a=sendonly", "a=msid:\(section.connectionID) \(track)"]
        let ssrcs = isVideo ? [section.ssrcs.video, section.ssrcs.rtx] : [section.ssrcs.audio]
        if isVideo { lines.append("a=ssrc-group:FID \(section.ssrcs.video) \(section.ssrcs.rtx)") }
        for ssrc in ssrcs {
            lines += ["a=ssrc:\(ssrc) cname:\(section.connectionID)", "a=ssrc:\(ssrc) msid:\(section.connectionID) \(track)"]
        }
        lines += ["a=candidate:1 1 udp 2130706431 \(transport.candidateAddress) \(transport.candidatePort) typ host", "a=end-of-candidates"]
    }
}
