import RTP

/// Where a packet belongs.
enum Route {
    case media(ReceiveTrack, ReceiveCodec)
    /// An RTX packet (RFC 4588) repairing `primary`, with the codec it carries.
    case retransmission(primary: UInt32, ReceiveTrack, ReceiveCodec)
    case unrouted(UnroutedReason)
}

public enum UnroutedReason: Sendable {
    /// No section claims the SSRC, and neither the MID extension nor the payload type tells.
    case unknownStream
    /// The payload type is not one negotiated for the stream's section.
    case unknownPayloadType
    /// An RTX packet whose original stream is not known.
    case unknownRetransmission
    /// The bound on learned SSRCs is reached.
    case tooManyStreams
    /// The section names its SSRCs in the SDP (as Sora does) and this is none of them: it is
    /// not taken as a new stream of that sender, whose file it would otherwise corrupt.
    case unannouncedStream
}

/// Maps RTP packets to tracks: by SSRC from the SDP, else by the MID header extension, else by
/// payload type when only one section could carry it. RTX SSRCs map to their primary by the
/// FID `ssrc-group`, else by their `apt` payload type plus the MID and repaired-RID extensions.
/// What is learned from packets is remembered, within a bound. A section whose SDP names its
/// SSRCs learns none: its media streams (and, with an FID group, its RTX streams) are exactly
/// the announced ones, so a hostile server cannot slip streams into a sender's recording.
struct StreamRouter {
    private(set) var tracks: [String: ReceiveTrack] = [:]
    private var midOfPrimary: [UInt32: String] = [:]
    private var ridOfPrimary: [UInt32: String] = [:]
    private var primaryOfRetransmission: [UInt32: UInt32] = [:]
    /// SSRCs the offer names: kept when their stream ends, since the offer still says so.
    private var announced: Set<UInt32> = []
    private var midExtensionIDs: [UInt8] = []
    static let maximumLearnedSSRCs = 8_192

    mutating func update(_ newTracks: [ReceiveTrack]) {
        tracks = Dictionary(newTracks.map { ($0.mid, $0) }, uniquingKeysWith: { first, _ in first })
        announced = Set(newTracks.flatMap { $0.ssrcs + Array($0.rtxSSRCs.keys) + Array($0.rtxSSRCs.values) })
        for track in newTracks {
            let retransmissions = Set(track.rtxSSRCs.values)
            for ssrc in track.ssrcs where !retransmissions.contains(ssrc) { midOfPrimary[ssrc] = track.mid }
            for (primary, retransmission) in track.rtxSSRCs {
                midOfPrimary[primary] = track.mid
                primaryOfRetransmission[retransmission] = primary
            }
        }
        midExtensionIDs = Array(Set(newTracks.compactMap(\.midExtensionID))).sorted()
        // Forget SSRCs of sections that went away (a released mid may be reused by a new sender).
        midOfPrimary = midOfPrimary.filter { tracks[$0.value] != nil }
        ridOfPrimary = ridOfPrimary.filter { midOfPrimary[$0.key] != nil }
        primaryOfRetransmission = primaryOfRetransmission.filter { midOfPrimary[$0.value] != nil }
    }

    /// SSRCs of sections that no longer exist are forgotten by `update`; this forgets one learned
    /// from packets that went silent, said BYE or could not become a stream. What the offer
    /// announced stays.
    mutating func forget(ssrc: UInt32) {
        guard !announced.contains(ssrc) else { return }
        midOfPrimary[ssrc] = nil
        ridOfPrimary[ssrc] = nil
        primaryOfRetransmission = primaryOfRetransmission.filter { $0.key != ssrc && $0.value != ssrc }
    }

    /// The SSRC carries retransmissions (RFC 4588) of another stream.
    func isRetransmission(_ ssrc: UInt32) -> Bool { primaryOfRetransmission[ssrc] != nil }

    mutating func route(_ packet: RTPPacket) -> Route {
        if let primary = primaryOfRetransmission[packet.ssrc] {
            guard let mid = midOfPrimary[primary], let track = tracks[mid] else { return .unrouted(.unknownRetransmission) }
            guard let codec = track.codec(retransmittedAs: packet.payloadType) else { return .unrouted(.unknownPayloadType) }
            return .retransmission(primary: primary, track, codec)
        }
        if let mid = midOfPrimary[packet.ssrc], let track = tracks[mid] {
            if let codec = track.codec(payloadType: packet.payloadType) { return .media(track, codec) }
            guard track.codec(retransmittedAs: packet.payloadType) != nil else { return .unrouted(.unknownPayloadType) }
            // The offer listed this SSRC without saying it is RTX (no FID group): learn it as such.
            midOfPrimary[packet.ssrc] = nil
        }
        return learn(packet)
    }

    /// An SSRC the offer did not announce: find its section and remember it.
    private mutating func learn(_ packet: RTPPacket) -> Route {
        guard let track = section(of: packet) else { return .unrouted(.unknownStream) }
        let isMedia = track.codec(payloadType: packet.payloadType) != nil
        let retransmissionSSRCs = Set(track.rtxSSRCs.values)
        let announcesPrimaries = track.ssrcs.contains { !retransmissionSSRCs.contains($0) }
        if isMedia ? announcesPrimaries : !track.rtxSSRCs.isEmpty { return .unrouted(.unannouncedStream) }
        guard midOfPrimary.count + primaryOfRetransmission.count < StreamRouter.maximumLearnedSSRCs else {
            return .unrouted(.tooManyStreams)
        }
        if let codec = track.codec(payloadType: packet.payloadType) {
            midOfPrimary[packet.ssrc] = track.mid
            if let id = track.ridExtensionID, let rid = packet.headerExtension(id) { ridOfPrimary[packet.ssrc] = String(decoding: rid, as: UTF8.self) }
            return .media(track, codec)
        }
        guard let codec = track.codec(retransmittedAs: packet.payloadType) else { return .unrouted(.unknownPayloadType) }
        // RTX on its own SSRC without a FID group: its primary is the section's stream with the
        // same RID (repaired-rtp-stream-id), or the section's only stream.
        let repairedRid = track.repairedRidExtensionID.flatMap { packet.headerExtension($0) }.map { String(decoding: $0, as: UTF8.self) }
        let candidates = midOfPrimary.filter { $0.value == track.mid }.map(\.key).filter { ssrc in
            repairedRid == nil || ridOfPrimary[ssrc] == repairedRid
        }
        guard candidates.count == 1, let primary = candidates.first else { return .unrouted(.unknownRetransmission) }
        primaryOfRetransmission[packet.ssrc] = primary
        return .retransmission(primary: primary, track, codec)
    }

    private func section(of packet: RTPPacket) -> ReceiveTrack? {
        for id in midExtensionIDs {
            if let value = packet.headerExtension(id) { return tracks[String(decoding: value, as: UTF8.self)] }
        }
        let candidates = tracks.values.filter {
            $0.codec(payloadType: packet.payloadType) != nil || $0.codec(retransmittedAs: packet.payloadType) != nil
        }
        return candidates.count == 1 ? candidates.first : nil
    }
}
