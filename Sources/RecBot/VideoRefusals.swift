import Logging
import SDP

/// Video sections answered with port 0 because WebM cannot hold their codec (H.265): one
/// warning and one catalog event per sender, and the sender's recording says so.
struct VideoRefusals {
    /// Sender connection id → the refused codecs, comma-separated.
    private(set) var bySender: [String: String] = [:]

    mutating func note(_ media: [NegotiatedMedia], eventLog: SignalingEventLog, logger: Logger) {
        for section in media where section.kind == .video && !section.accepted && !section.refusedCodecs.isEmpty {
            guard let sender = section.msidStream, bySender[sender] == nil else { continue }
            bySender[sender] = section.refusedCodecs.joined(separator: ",")
            logger.warning("video refused: WebM cannot hold this codec; the sender's audio is still recorded",
                           metadata: ["sender": "\(sender.prefix(80))", "codecs": "\(section.refusedCodecs.joined(separator: ","))"])
            eventLog.recordRefusedVideo(sender: sender, codecs: section.refusedCodecs)
        }
    }
}
