import Media
import SDP

/// The negotiated sections the media core receives on, in its own terms (it knows no SDP).
extension ReceiveTrack {
    /// Receiving audio and video sections only; inactive and rejected ones carry nothing.
    public static func tracks(from media: [NegotiatedMedia]) -> [ReceiveTrack] {
        media.compactMap(ReceiveTrack.init(negotiated:))
    }

    public init?(negotiated section: NegotiatedMedia) {
        guard section.accepted, section.receiving, let mid = section.mid else { return nil }
        let kind: MediaKind
        switch section.kind {
        case .audio: kind = .audio
        case .video: kind = .video
        default: return nil
        }
        func extensionID(_ uri: String) -> UInt8? {
            section.headerExtensions.first { $0.uri == uri }.flatMap { UInt8(exactly: $0.id) }
        }
        let codecs = section.codecs.map { codec in
            ReceiveCodec(payloadType: codec.payloadType, name: codec.name, clockRate: codec.clockRate, channels: codec.channels,
                         rtxPayloadType: codec.rtxPayloadType, feedback: FeedbackSupport(rtcpFeedback: codec.rtcpFeedback))
        }
        self.init(mid: mid, kind: kind, sender: section.msidStream, codecs: codecs, ssrcs: section.ssrcs, rtxSSRCs: section.rtxSSRCs,
                  midExtensionID: extensionID(ReceiverCapabilities.midExtension),
                  ridExtensionID: extensionID(ReceiverCapabilities.ridExtension),
                  repairedRidExtensionID: extensionID(ReceiverCapabilities.repairedRidExtension),
                  videoOrientationExtensionID: kind == .video ? extensionID(ReceiverCapabilities.videoOrientationExtension) : nil)
    }
}
