import Media
import WireCoding

/// What the core says about shedding: once when an episode starts and once when it ends (for
/// the log), and each sender's video pausing and resuming (for the recordings' gaps).
public enum OverloadEvent: Equatable, Sendable {
    case started(pausedStreams: Int, videoStreams: Int, waitMilliseconds: Int64)
    case ended(pauses: Int, milliseconds: Int64)
    case videoPaused(sender: String, ssrc: UInt32)
    case videoResumed(sender: String, ssrc: UInt32)
}

extension PeerConnectionCore {
    /// The paused video streams' boundaries, for a driver that drops their packets as it reads
    /// them; `pausedVideoGeneration` changes whenever they do.
    public var pausedVideoBoundaries: [UInt32: UInt32] { pausedVideo.boundaries }
    public var pausedVideoGeneration: Int { pausedVideo.generation }

    /// The oldest media datagram of a batch waited `wait` between the socket and the core:
    /// the governor's sample; at the end of each interval it pauses or resumes video streams.
    func observeReceiveWait(_ wait: Int64, now: MonotonicTime) -> TransportOutput {
        var output = TransportOutput()
        guard let media, failure == nil, governor.observe(wait: wait, now: now) else { return output }
        guard let wanted = governor.decide(order: { media.videoStreamsInOrder }, now: now) else { return output }
        let wasShedding = !pausedVideo.isEmpty
        for ssrc in pausedVideo.streams.keys.sorted() where !wanted.contains(ssrc) {
            resume(ssrc, media: media, now: now, &output)
        }
        for ssrc in wanted.sorted() where pausedVideo.streams[ssrc] == nil {
            guard let boundary = media.pauseVideo(ssrc: ssrc, now: now) else { continue }
            pausedVideo.pause(ssrc: ssrc, boundary: boundary)
            counters.videoPauses += 1
            if let sender = media.sender(ofStream: ssrc) { output.events.append(.overload(.videoPaused(sender: sender, ssrc: ssrc))) }
        }
        counters.pausedVideoStreams = pausedVideo.count
        // The interval's largest wait decided it, not this batch's.
        noteEpisode(wasShedding: wasShedding, wait: governor.previousMaximum, videoStreams: media.videoStreamCount, now: now, &output)
        return routed(output, now: now)
    }

    private func resume(_ ssrc: UInt32, media: MediaReceiver, now: MonotonicTime, _ output: inout TransportOutput) {
        guard pausedVideo.resume(ssrc: ssrc) else { return }
        absorb(media.resumeVideo(ssrc: ssrc, now: now), &output)
        if let sender = media.sender(ofStream: ssrc) { output.events.append(.overload(.videoResumed(sender: sender, ssrc: ssrc))) }
    }

    private func noteEpisode(wasShedding: Bool, wait: Int64, videoStreams: Int, now: MonotonicTime, _ output: inout TransportOutput) {
        let shedding = !pausedVideo.isEmpty
        if shedding && !wasShedding {
            counters.overloadEpisodes += 1
            overloadEpisode = (began: now, pausesBefore: counters.videoPauses - pausedVideo.count)
            output.events.append(.overload(.started(pausedStreams: pausedVideo.count, videoStreams: videoStreams,
                                                    waitMilliseconds: wait / 1_000_000)))
        } else if !shedding, wasShedding, let episode = overloadEpisode {
            overloadEpisode = nil
            output.events.append(.overload(.ended(pauses: counters.videoPauses - episode.pausesBefore,
                                                  milliseconds: (now.nanoseconds - episode.began.nanoseconds) / 1_000_000)))
        }
        counters.shedVideoFrames = pausedVideo.shedFrames
        counters.shedVideoPackets = pausedVideo.shedPackets
    }
}
