import Logging
import PeerConnection

extension MediaPath {
    /// One line when shedding starts and one when the last paused stream is back: an
    /// overloaded host says so once per episode, never per stream or per packet.
    static func log(_ event: OverloadEvent, logger: Logger) {
        switch event {
        case .started(let paused, let streams, let wait):
            logger.warning("past capacity: pausing video of some senders in turn (audio, data channels and control are kept; each paused video resumes at a keyframe)",
                           metadata: ["paused_streams": "\(paused)", "video_streams": "\(streams)", "wait_ms": "\(wait)"])
        case .ended(let pauses, let milliseconds):
            logger.notice("back within capacity: every paused video has resumed",
                          metadata: ["video_pauses": "\(pauses)", "seconds": "\(Double(milliseconds) / 1000)"])
        case .videoPaused(let sender, let ssrc):
            logger.debug("video paused for overload", metadata: ["sender": "\(sender)", "ssrc": "\(ssrc)"])
        case .videoResumed(let sender, let ssrc):
            logger.debug("video resumed", metadata: ["sender": "\(sender)", "ssrc": "\(ssrc)"])
        }
    }
}
