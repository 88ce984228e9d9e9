import Media
import WebM
import WireCoding

/// Time-split recording (`SplitPolicy`): each sender's media goes into parts that end on the
/// session's split boundaries. Audio is cut at the boundary; video at the first keyframe at
/// or after it, which is asked for when the boundary passes, so every part starts with one.
/// Parts of a sender tile its timeline: each stops at the boundary's whole second, where the
/// next starts (hisui drops a part that starts before the previous one stops).
extension Recordings {
    func addSplit(_ received: ReceivedFrame, current: SenderRecorder, now: MonotonicTime) -> FrameSource? {
        guard let split else { return nil }
        let (sender, time, video) = (received.sender, received.mediaTime, received.kind == .video)
        var wholeDropped: FrameSource?
        if let whole = wholeFile(for: sender, like: current) {
            wholeDropped = whole.add(received.frame, video: video, mediaTime: time, arrival: now, ssrc: received.ssrc)
        }
        if nextBoundaries[sender] == nil { nextBoundaries[sender] = split.boundary(after: time, recordingStart: recordingStartTime) }
        if cuts[sender] == nil, let boundary = nextBoundaries[sender], time >= boundary { startCut(sender, previous: current, at: boundary) }
        let part = cuts[sender].map { route(received, cut: $0) } ?? recorders[sender] ?? current
        let dropped = part.add(received.frame, video: video, mediaTime: time, arrival: now, ssrc: received.ssrc)
        return dropped ?? wholeDropped
    }

    /// The boundary passed: the next part starts (its audio from the boundary on); the current
    /// one keeps the video until the cut.
    private func startCut(_ sender: String, previous: SenderRecorder, at boundary: MonotonicTime) {
        guard let split else { return }
        nextBoundaries[sender] = split.boundary(after: boundary, recordingStart: recordingStartTime)
        // A part with nothing in it yet simply starts later: it stays the current one.
        guard previous.hasMedia, makeRecorder(sender, tracks: previous.tracks, startsAt: boundary) != nil else { return }
        leave(previous)
        cuts[sender] = SplitCut(boundary: boundary, previous: previous)
        if previous.tracks.videoCodec == nil { endCut(sender) }
    }

    /// Which part a frame goes to while its sender is between two.
    private func route(_ received: ReceivedFrame, cut: SplitCut) -> SenderRecorder {
        guard let next = recorders[received.sender] else { return cut.previous }
        let afterBoundary = received.mediaTime >= cut.boundary
        guard received.kind == .video else { return afterBoundary ? next : cut.previous }
        guard afterBoundary else { return cut.previous }
        if received.frame.isKeyframe {
            endCut(received.sender)
            return next
        }
        // Until the keyframe comes, asked for on every frame (the media core's rate limit and
        // feedback budget decide what is sent). Past the wait, cut anyway: the next part's
        // video starts at the next keyframe.
        output.keyframesWanted.append(received.ssrc)
        guard received.mediaTime.nanoseconds - cut.boundary.nanoseconds >= SplitPolicy.keyframeWaitNanoseconds else { return cut.previous }
        endCut(received.sender)
        output.events.append(.cutWithoutKeyframe(sender: received.sender, part: next.part))
        return next
    }

    /// The previous part is done: finished by the caller (it is not the sender's last).
    func endCut(_ sender: String) {
        guard let cut = cuts.removeValue(forKey: sender) else { return }
        endAsPart(cut.previous, boundary: cut.boundary)
        retire(cut.previous)
    }

    /// The sender's whole-file archive beside its split parts (not with `only`), started on its
    /// first frame and never again once it ended.
    private func wholeFile(for sender: String, like current: SenderRecorder) -> SenderRecorder? {
        guard let split, !split.only, !wholeFileEnded.contains(sender) else { return nil }
        if let existing = wholeFiles[sender] { return existing }
        guard let whole = newRecorder(sender, tracks: current.tracks, part: 0) else { return nil }
        wholeFiles[sender] = whole
        wholeFileCopies.insert(ObjectIdentifier(whole))
        return whole
    }

    /// A video codec change: the sender's whole-file archive takes the new codec if it has no
    /// media yet, else it ends there (returned, to be finished).
    func endWholeFileOnCodecChange(_ sender: String, to codec: WebMVideoCodec) -> [SenderRecorder] {
        guard let whole = wholeFiles[sender], !whole.changeVideoCodecBeforeStart(to: codec) else { return [] }
        return endWholeFiles { $0 == sender }
    }

    /// Ends the whole-file archives of the senders `which` names; returns them to be finished.
    func endWholeFiles(_ which: (String) -> Bool) -> [SenderRecorder] {
        let ending = wholeFiles.filter { which($0.key) }
        for (sender, recorder) in ending {
            wholeFiles[sender] = nil
            wholeFileEnded.insert(sender)
            leave(recorder)
        }
        return Array(ending.values)
    }
}
