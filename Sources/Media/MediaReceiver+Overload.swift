import WireCoding

/// Pausing video for overload (the peer connection's `OverloadGovernor` decides which): a
/// paused stream's newer pictures are dropped before SRTP, so the stream must not take the
/// gap for loss, must not expire while paused, and must restart at a keyframe.
extension MediaReceiver {
    /// Every video stream, by sender and then SSRC: the order in which pauses rotate.
    public var videoStreamsInOrder: [UInt32] {
        streams.values.filter { $0.kind == .video }
            .sorted { ($0.sender, $0.ssrc) < ($1.sender, $1.ssrc) }
            .map(\.ssrc)
    }

    /// Pauses `ssrc`'s video. Returns the RTP timestamp of its last picture taken in: packets
    /// newer than that are to be dropped. Nil when it is not a video stream, already paused,
    /// or has no packet yet.
    public func pauseVideo(ssrc: UInt32, now: MonotonicTime) -> UInt32? {
        guard let stream = streams[ssrc], stream.kind == .video else { return nil }
        return stream.pause(now: now)
    }

    /// Resumes `ssrc`: it asks for a keyframe at once and records nothing until one arrives.
    /// The request is not held to the session's feedback budget: the governor paces resumes
    /// itself, and a resumed stream whose request waited would cost its decryption while
    /// recording nothing.
    public func resumeVideo(ssrc: UInt32, now: MonotonicTime) -> MediaOutput {
        var output = MediaOutput()
        guard let stream = streams[ssrc], stream.paused else { return output }
        stream.resume(now: now)
        timelines.with(stream.sender) { $0.restartTimeline(ssrc: ssrc) }
        var unbudgeted = FeedbackBudget(policy: .unlimited)
        if let request = stream.keyframeRequest(localSSRC: rtcpSender(forMedia: ssrc), now: now, budget: &unbudgeted, wanted: true) {
            output.rtcp = compounds(feedback: [request], reports: [], now: now)
        }
        return output
    }
}

extension MediaReceiver {
    /// The sender (`ReceiveTrack.senderKey`) a stream belongs to.
    public func sender(ofStream ssrc: UInt32) -> String? { streams[ssrc]?.sender }

    public var videoStreamCount: Int { streams.values.reduce(0) { $0 + ($1.kind == .video ? 1 : 0) } }
}
