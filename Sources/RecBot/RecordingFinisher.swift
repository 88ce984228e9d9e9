import Archive
import DiskLayout
import Foundation
import Media
import Recorder
import Synchronization
import WireCoding

/// Finishes senders' files (blocking file I/O: never on the event loop nor on Swift's
/// cooperative threads), catalogs each, and keeps them for the report.
final class RecordingFinisher: Sendable {
    /// Told as files are finished (on the finishing thread).
    struct Hooks: Sendable {
        /// A recorder's finishing ended with these totals.
        var finished: @Sendable (ObjectIdentifier, RecordingTotals) -> Void = { _, _ in }
        /// A file is finished and cataloged (its sidecar written, or its failure known).
        var archive: @Sendable (FinishedRecording, SidecarContext, ArchiveLayout) -> Void = { _, _, _ in }
        /// A split sender's end marker is written.
        var splitEnd: @Sendable (FinishedRecording, SidecarContext, ArchiveLayout) -> Void = { _, _, _ in }
    }

    private struct State {
        var items: [FinishedRecording] = []
        /// Senders (and parts) being finished right now.
        var inFlight: [String: Int] = [:]
        /// Each split sender's highest finished part, and whether its end marker names it.
        var lastParts: [String: (part: Int, marked: Bool)] = [:]
        /// Senders' client and bundle ids, as the notifies tell them (the offer names neither).
        var participants: (clientIDs: [String: String], bundleIDs: [String: String]) = ([:], [:])
    }

    private let sessionID: String
    private let writer: CatalogWriter
    private let state = Mutex(State())
    private let group = DispatchGroup()
    private let hooks: Hooks

    /// The host the files are cataloged under (`JoinOptions.host`).
    private let host: String

    private let clock: any TimeSource

    /// The session's segment this process records (its rows carry it).
    private let segment: Int

    init(sessionID: String, host: String, segment: Int, writer: CatalogWriter, clock: any TimeSource, hooks: Hooks = Hooks()) {
        self.segment = segment
        self.clock = clock
        self.hooks = hooks
        self.sessionID = sessionID
        self.host = host
        self.writer = writer
    }

    var all: [FinishedRecording] { state.withLock { $0.items } }

    /// A notify named a sender's client or bundle id: its sidecars and the report carry it.
    func noteParticipant(connectionID: String, clientID: String?, bundleID: String?) {
        state.withLock { state in
            if let clientID { state.participants.clientIDs[connectionID] = clientID }
            if let bundleID { state.participants.bundleIDs[connectionID] = bundleID }
        }
    }

    /// `context` with the participants' ids known so far (the context's own win).
    func withParticipants(_ context: SidecarContext) -> SidecarContext {
        var context = context
        let known = state.withLock { $0.participants }
        context.clientIDs.merge(known.clientIDs) { own, _ in own }
        context.bundleIDs.merge(known.bundleIDs) { own, _ in own }
        return context
    }

    /// `isLastPart`: the sender's recording ends here (it left, or the session ended); a split
    /// sender then gets its end marker. A part retired by a codec change is not the last.
    func finish(_ recorder: SenderRecorder, counts: ReceiveCounters, context: SidecarContext, isLastPart: Bool = true) {
        let context = withParticipants(context)
        group.enter()
        let name = recorder.connectionID
        state.withLock { $0.inFlight[name, default: 0] += 1 }
        DispatchQueue.global().async { [self] in
            defer {
                state.withLock { state in
                    state.inFlight[name, default: 1] -= 1
                    if state.inFlight[name] == 0 { state.inFlight[name] = nil }
                }
                group.leave()
            }
            let finished = recorder.finish(stoppedAtMilliseconds: clock.wallClockMilliseconds(), now: clock.now(),
                                           context: context, reception: counts)
            // Before the group is left: whoever waits for the finishing then sees these totals.
            hooks.finished(ObjectIdentifier(recorder), RecordingTotals(recorder))
            guard let done = finished else { return }
            state.withLock { state in
                state.items.append(done)
                if done.part > 0, done.part >= state.lastParts[name]?.part ?? 0 { state.lastParts[name] = (done.part, false) }
            }
            catalog(done, sender: recorder.connectionID, layout: recorder.layout, counts: counts)
            hooks.archive(done, context, recorder.layout)
            if isLastPart && done.part > 0 { writeSplitEnd(done, layout: recorder.layout, context: context) }
        }
    }

    /// At the session's end: senders whose last part ended with a lost connection (they did
    /// not come back after the rejoin) get the end marker naming that part.
    func writeMissingSplitEnds(layout: ArchiveLayout, context: SidecarContext) {
        let context = withParticipants(context)
        let unmarked = state.withLock { $0.lastParts.filter { !$0.value.marked } }
        for (sender, last) in unmarked.sorted(by: { $0.key < $1.key }) {
            guard let done = all.last(where: { $0.connectionID == sender && $0.part == last.part }) else { continue }
            writeSplitEnd(done, layout: layout, context: context)
        }
    }

    /// `split-archive-end-<id>.json` names the sender's last part (after its media and sidecar).
    private func writeSplitEnd(_ done: FinishedRecording, layout: ArchiveLayout, context: SidecarContext) {
        state.withLock { state in
            if state.lastParts[done.connectionID]?.part == done.part { state.lastParts[done.connectionID]?.marked = true }
        }
        do {
            try ArchiveLayout.writeJSON(Sidecar.splitEnd(connectionID: done.connectionID, lastPart: done.part, context: context),
                                        to: layout.path(of: layout.splitEndFilename(connectionID: done.connectionID)))
            hooks.splitEnd(done, context, layout)
        } catch {
            state.withLock { state in
                if let index = state.items.lastIndex(where: { $0.connectionID == done.connectionID && $0.part == done.part }) {
                    state.items[index].error = "split end marker: \(error)"
                }
            }
        }
    }

    /// Waits until every file being finished is done, or `timeoutSeconds` passed; returns the
    /// senders still being finished then (their files stay `recording` in the catalog, for
    /// `recbot repair`).
    func waitForAll(timeoutSeconds: Double) async -> [String] {
        // A thread of its own waits: with every pool thread stuck on a hung disk, a timer on
        // the global queue would not fire.
        let group = self.group
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                _ = group.wait(timeout: .now() + max(0, timeoutSeconds))
                continuation.resume()
            }.start()
        }
        return state.withLock { $0.inFlight.keys.sorted() }
    }

    private func catalog(_ done: FinishedRecording, sender: String, layout: ArchiveLayout, counts: ReceiveCounters) {
        let sessionID = self.sessionID
        let path = layout.catalogPath(done.filename)
        var row = RecordingRecord(sessionID: sessionID, connectionID: sender, part: done.part, path: path,
                                  videoCodec: done.tracks.videoCodec?.rawValue, audioCodec: done.tracks.audioChannels != nil ? "OPUS" : nil,
                                  startedAt: done.startedAtMilliseconds,
                                  status: done.error == nil && done.interruption == nil ? .complete : .interrupted)
        row.error = done.error ?? done.interruption
        (row.host, row.segment) = (host, segment)
        row.endedAt = done.stoppedAtMilliseconds
        row.durationMs = done.durationMilliseconds
        row.bytes = Int64(done.size)
        row.videoFrames = Int64(done.statistics.videoFrames)
        row.audioFrames = Int64(done.statistics.audioFrames)
        row.packetsReceived = Int64(counts.packets)
        row.packetsLost = Int64(counts.lost)
        row.nacksSent = Int64(counts.nackedSequenceNumbers)
        row.packetsRecovered = Int64(counts.recovered)
        row.framesDropped = Int64(counts.framesDropped.total + done.statistics.framesDropped)
        row.keyframeRequests = Int64(counts.keyframeRequests)
        row.pliSent = Int64(counts.pictureLossIndications)
        row.firSent = Int64(counts.fullIntraRequests)
        row.packetsLate = Int64(counts.lateArrivals)
        row.packetsDuplicate = Int64(counts.duplicates)
        row.jitterMs = counts.packets > 0 ? (counts.jitterMilliseconds * 10).rounded() / 10 : nil
        row.framesDroppedIncomplete = Int64(counts.framesDropped.incomplete)
        row.framesDroppedKeyframeWait = Int64(counts.framesDropped.waitingForKeyframe + done.statistics.framesDroppedAwaitingKeyframe)
        row.framesDroppedMalformed = Int64(counts.framesDropped.malformed + counts.framesDropped.oversized)
        row.framesDroppedRecorder = Int64(done.statistics.framesDroppedForOrder + done.statistics.framesDroppedForBackpressure
                                         + done.statistics.framesDroppedAfterWriteError)
        row.videoSizes = done.statistics.videoSizes.isEmpty ? nil : done.statistics.videoSizes.joined(separator: ",")
        row.videoRefused = done.refusedVideoCodec
        writer.submit(.completeRecording(row, createdPath: layout.catalogPath(done.createdFilename)))
    }
}
