/// What the negotiation says one received m-section carries. The media core knows nothing of
/// SDP: the transport layer translates its negotiated sections into these.
public enum MediaKind: String, Sendable, Equatable {
    case audio, video
}

/// RTCP feedback the offer allows for a codec (RFC 4585, RFC 5104).
public struct FeedbackSupport: Sendable, Equatable {
    public var nack = false
    public var pictureLossIndication = false
    public var fullIntraRequest = false

    public init(nack: Bool = false, pictureLossIndication: Bool = false, fullIntraRequest: Bool = false) {
        self.nack = nack
        self.pictureLossIndication = pictureLossIndication
        self.fullIntraRequest = fullIntraRequest
    }

    /// From negotiated `rtcp-fb` values such as "nack", "nack pli", "ccm fir".
    public init(rtcpFeedback: [String]) {
        let values = Set(rtcpFeedback.map { $0.lowercased() })
        self.init(nack: values.contains("nack"), pictureLossIndication: values.contains("nack pli"),
                  fullIntraRequest: values.contains("ccm fir"))
    }

    public var canRequestKeyframe: Bool { pictureLossIndication || fullIntraRequest }
}

public struct ReceiveCodec: Sendable, Equatable {
    public var payloadType: UInt8
    /// Upper-case encoding name: VP8, VP9, AV1, H264, OPUS.
    public var name: String
    public var clockRate: Int
    public var channels: Int?
    /// The payload type of this codec's retransmissions (RFC 4588 `apt`), when negotiated.
    public var rtxPayloadType: UInt8?
    public var feedback: FeedbackSupport

    public init(payloadType: UInt8, name: String, clockRate: Int, channels: Int? = nil, rtxPayloadType: UInt8? = nil,
                feedback: FeedbackSupport = FeedbackSupport()) {
        self.payloadType = payloadType
        self.name = name
        self.clockRate = clockRate
        self.channels = channels
        self.rtxPayloadType = rtxPayloadType
        self.feedback = feedback
    }
}

/// One received track: a receiving audio or video m-section.
public struct ReceiveTrack: Sendable, Equatable {
    public var mid: String
    public var kind: MediaKind
    /// The sender's connection id (the msid stream id, Sora's convention), when the offer says.
    public var sender: String?
    public var codecs: [ReceiveCodec]
    /// SSRCs the offer announces for this section (media and RTX).
    public var ssrcs: [UInt32]
    /// FID groups: primary SSRC → its retransmission SSRC.
    public var rtxSSRCs: [UInt32: UInt32]
    /// Local ids of the header extensions the router reads.
    public var midExtensionID: UInt8?
    public var ridExtensionID: UInt8?
    public var repairedRidExtensionID: UInt8?
    /// `urn:3gpp:video-orientation`, when negotiated: the frames then carry the sender's rotation.
    public var videoOrientationExtensionID: UInt8?

    public init(mid: String, kind: MediaKind, sender: String?, codecs: [ReceiveCodec], ssrcs: [UInt32] = [], rtxSSRCs: [UInt32: UInt32] = [:],
                midExtensionID: UInt8? = nil, ridExtensionID: UInt8? = nil, repairedRidExtensionID: UInt8? = nil,
                videoOrientationExtensionID: UInt8? = nil) {
        self.mid = mid
        self.kind = kind
        self.sender = sender
        self.codecs = codecs
        self.ssrcs = ssrcs
        self.rtxSSRCs = rtxSSRCs
        self.midExtensionID = midExtensionID
        self.ridExtensionID = ridExtensionID
        self.repairedRidExtensionID = repairedRidExtensionID
        self.videoOrientationExtensionID = videoOrientationExtensionID
    }

    /// The sender this track's media is recorded under (a placeholder when the offer names none).
    public var senderKey: String { sender ?? "mid-\(mid)" }

    public func codec(payloadType: UInt8) -> ReceiveCodec? { codecs.first { $0.payloadType == payloadType } }

    /// The codec whose retransmissions use `payloadType`.
    public func codec(retransmittedAs payloadType: UInt8) -> ReceiveCodec? { codecs.first { $0.rtxPayloadType == payloadType } }
}

/// What a sender's recording holds, decided from the offer (its audio and video sections),
/// not from which packet happens to arrive first.
public struct SenderLayout: Sendable, Equatable {
    /// The video codec of its video section (the first negotiated one), when it has one.
    public var videoCodec: String?
    public var audioChannels: Int?

    public init(videoCodec: String?, audioChannels: Int?) {
        self.videoCodec = videoCodec
        self.audioChannels = audioChannels
    }

    public static func of(_ sender: String, in tracks: [ReceiveTrack]) -> SenderLayout {
        let mine = tracks.filter { $0.senderKey == sender }
        let video = mine.first { $0.kind == .video }?.codecs.first?.name
        let audio = mine.first { $0.kind == .audio }.map { track in track.codecs.first?.channels ?? 2 }
        return SenderLayout(videoCodec: video, audioChannels: audio)
    }
}
