import Media
import RTP
import SDP
import WebM

/// One received track: an m-section with its codecs and the sender it belongs to.
struct RoutedTrack {
    var mid: String
    var isVideo: Bool
    /// The sender's connection id (msid stream id, Sora's convention), when the offer says.
    var sender: String?
    var codecs: [UInt8: NegotiatedCodec]
    var rtxPayloadTypes: Set<UInt8>
}

/// Maps RTP packets to tracks: by SSRC from the SDP, else by the MID header extension,
/// else by payload type when only one section could carry it. Learned SSRCs are remembered.
struct TrackRouter {
    private(set) var tracks: [String: RoutedTrack] = [:]
    private var ssrcToMid: [UInt32: String] = [:]
    private var rtxSSRCs: Set<UInt32> = []
    private var midExtensionID: UInt8?
    static let maximumLearnedSSRCs = 1_024

    mutating func update(_ media: [NegotiatedMedia]) {
        tracks = [:]
        for section in media where section.receiving {
            guard let mid = section.mid, let kind = section.kind, kind != .application else { continue }
            var codecs: [UInt8: NegotiatedCodec] = [:]
            var rtx: Set<UInt8> = []
            for codec in section.codecs {
                codecs[codec.payloadType] = codec
                if let pt = codec.rtxPayloadType { rtx.insert(pt) }
            }
            tracks[mid] = RoutedTrack(mid: mid, isVideo: kind == .video, sender: section.msidStream, codecs: codecs, rtxPayloadTypes: rtx)
            for ssrc in section.ssrcs where !section.rtxSSRCs.values.contains(ssrc) { ssrcToMid[ssrc] = mid }
            for (_, rtxSSRC) in section.rtxSSRCs { rtxSSRCs.insert(rtxSSRC) }
            if let id = section.headerExtensions.first(where: { $0.uri == ReceiverCapabilities.midExtension })?.id { midExtensionID = UInt8(id) }
        }
        // Forget SSRCs of sections that went away (a released mid may be reused by a new sender).
        ssrcToMid = ssrcToMid.filter { tracks[$0.value] != nil }
    }

    /// The track of a packet, or nil (unknown stream, retransmission stream, or unknown payload type).
    mutating func route(_ packet: RTPPacket) -> RoutedTrack? {
        if rtxSSRCs.contains(packet.ssrc) { return nil }  // RTX is only sent on NACK, which recbot does not send yet
        if let mid = ssrcToMid[packet.ssrc], let track = tracks[mid] {
            return track.codecs[packet.payloadType] != nil ? track : nil
        }
        var mid: String?
        if let id = midExtensionID, let value = packet.headerExtension(id) { mid = String(decoding: value, as: UTF8.self) }
        if mid == nil {
            let candidates = tracks.values.filter { $0.codecs[packet.payloadType] != nil }
            if candidates.count == 1 { mid = candidates[0].mid }
        }
        guard let mid, let track = tracks[mid], track.codecs[packet.payloadType] != nil else { return nil }
        if ssrcToMid.count < TrackRouter.maximumLearnedSSRCs { ssrcToMid[packet.ssrc] = mid }
        return track
    }

    static func depacketizer(for codec: NegotiatedCodec) -> (any Depacketizer)? {
        switch codec.name {
        case "VP8": VP8Depacketizer()
        case "H264": H264Depacketizer()
        case "OPUS": OpusDepacketizer()
        default: nil  // VP9 and AV1 depacketizers come with the media hardening work
        }
    }

    static func webMCodec(_ name: String) -> WebMVideoCodec? {
        switch name {
        case "VP8": .vp8
        case "VP9": .vp9
        case "AV1": .av1
        case "H264": .h264
        default: nil
        }
    }
}
