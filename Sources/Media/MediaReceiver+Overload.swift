import WireCoding

/// Pausing video for overload (the peer connection's `OverloadGovernor` decides which): a
/// paused stream's newer pictures are dropped before SRTP, so the stream must not take the
/// gap for loss, must not expire while packets still come, and must restart at a keyframe.
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

    /// Resumes `ssrc` after `shedFrames` pictures were dropped: it asks for a keyframe at once
    /// and records nothing until one arrives.
    public func resumeVideo(ssrc: UInt32, shedFrames: Int, now: MonotonicTime) -> MediaOutput {
        guard let stream = streams[ssrc], stream.paused else { return MediaOutput() }
        stream.resume(shedFrames: shedFrames, now: now)
        return requestKeyframe(ssrc: ssrc, now: now)
    }

    /// Packets of paused `ssrc` are still arriving.
    public func keepAlive(ssrc: UInt32, now: MonotonicTime) {
        streams[ssrc]?.keepAlive(now: now)
    }
}

extension MediaReceiver {
    /// The sender (`ReceiveTrack.senderKey`) a stream belongs to.
    public func sender(ofStream ssrc: UInt32) -> String? { streams[ssrc]?.sender }

    public var videoStreamCount: Int { streams.values.reduce(0) { $0 + ($1.kind == .video ? 1 : 0) } }
}
