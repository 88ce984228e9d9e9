import Logging
import SoraSignaling
import SoraSignalingCore

/// An empty room's offer may have no section at all (RFC 3264 §5: the streams come in a later
/// offer). recbot answers it as it is, keeps the conversation going on the WebSocket (pings,
/// notify and push stored, a stop obeyed) and, at the first re-offer with sections, binds the
/// transport and answers that re-offer as the connection's first media. Until then there is no
/// transport, so nothing goes to a data channel and no candidate is used.
extension SessionConnection {
    enum EmptyRoomOutcome {
        /// The transport is up; `actions` (the re-answer and its candidates first) are the
        /// conversation's to carry out.
        case media(MediaPath, actions: [SignalingSession.Action])
        /// The conversation ended before anyone sent.
        case ended(SignalingSessionEnd)
        /// A re-offer could not be answered: the session's end.
        case failed(SessionEnding)
    }

    func waitForFirstSender(_ signaling: inout SignalingSession, start: SignalingStart, emptyAnswer: String) async -> EmptyRoomOutcome {
        let connection = start.connection
        var pending = signaling.handle(.answered(sdp: emptyAnswer, candidates: []), now: session.clock.now())
        var receivedAt: Int64?
        while true {
            if pending.isEmpty {
                guard let input = await inbox.next() else {
                    return .ended(SignalingSessionEnd(cause: .requested, reason: stopRequest.requested ?? "ended"))
                }
                pending = signaling.handle(input, now: session.clock.now())
                receivedAt = input.receivedAt
                continue
            }
            switch pending.removeFirst() {
            case .end(let end):
                return .ended(end)
            case .send(let text, _):
                connection.send(text)  // the WebSocket: no data channel exists yet
            case .store(let record):
                media.eventLog.store(record, receivedAt: receivedAt)
            case .log(let line):
                SessionConnection.log(line, session.logger)
            case .addRemoteCandidate:
                break  // no transport to use it; the re-offer's answer starts ICE afresh
            case .collectStats(let request):
                let stats = SignalingSession.Input.stats(request, packetsReceived: 0, timestamp: session.clock.wallClockMilliseconds())
                pending.insert(contentsOf: signaling.handle(stats, now: session.clock.now()), at: 0)
            case .renegotiate(let request):
                var withSections = start
                withSections.offer.sdp = request.sdp
                switch await MediaPath.answer(withSections, options: options, session: session, media: media) {
                case .answered(let path):
                    guard case .answered(let answer, let candidates) = path.answered else { preconditionFailure("a media path's answer") }
                    session.logger.info("a sender came: the re-offer brings the first media")
                    let reAnswer = signaling.handle(.renegotiated(request, answerSDP: answer), now: session.clock.now())
                    return .media(path, actions: reAnswer + candidates.map { .send(OutgoingMessage.candidate($0), .webSocket) } + pending)
                case .nothingToReceive(let stillEmpty):
                    pending.insert(contentsOf: signaling.handle(.renegotiated(request, answerSDP: stillEmpty), now: session.clock.now()), at: 0)
                case .failed(let ending):
                    return .failed(ending)
                }
            }
        }
    }
}
