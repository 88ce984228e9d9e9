import WireCoding

/// Whether a connection that went quiet is worth keeping (sans-IO; `ConnectionWatch` drives
/// it). A short outage (a blackout, a dead NAT that recovers) must cost no more than itself,
/// so a quiet connection is not closed while the signaling server cannot be reached either
/// (the network is dark: when it comes back, so does this connection, with no rejoin); it is
/// closed, for a rejoin at once, when the server answers again but the connection still does
/// not (it is gone at the far end). A connection that still delivers media is never judged
/// quiet. What stays dark for the whole consent window (RFC 7675's 30 s) the transport ends
/// itself.
///
/// Two signals: the media path (ICE consent answers, checked every 2 s, and media) and the
/// WebSocket (pinged every 2 s). A quiet path is an outage (`stalled` … `resumed`). A
/// WebSocket alone that is quiet is given longer once the server answers: after a blackout
/// TCP retransmits on its own backoff, seconds after the path is back.
struct LivenessWatch {
    struct Settings: Sendable {
        /// No ICE consent answer and no media for this long: the path is quiet.
        var pathQuietNanoseconds: Int64 = 4_500_000_000
        /// Nothing on the WebSocket for this long.
        var webSocketQuietNanoseconds: Int64 = 6_500_000_000
        /// After the server answers a probe, how long a quiet path has to come back itself
        /// (two or three hurried consent checks) before the connection is given up.
        var pathGraceNanoseconds: Int64 = 3_000_000_000
        /// The same for a quiet WebSocket (TCP's retransmission backoff after an outage).
        var webSocketGraceNanoseconds: Int64 = 15_000_000_000
    }

    /// What the connection shows now. nil: nothing to judge (consent: no pair selected yet;
    /// media: none came yet; WebSocket: none to watch, as after Sora closed it for data-channel
    /// signaling).
    struct Signals {
        var consentAt: MonotonicTime?
        var mediaAt: MonotonicTime?
        var webSocketAt: MonotonicTime?
    }

    enum Action: Equatable {
        /// The media path went quiet: an outage begins (the connection is kept).
        case stalled(cause: String)
        /// The path came back by itself after this long: the outage ends, no rejoin.
        case resumed(afterNanoseconds: Int64)
        /// The server answers but the connection does not: end it (a rejoin follows).
        case end(reason: String)
    }

    let settings: Settings
    /// When the media path went quiet; nil while it is not.
    private(set) var stalledSince: MonotonicTime?
    /// When a probe first reached the signaling server while something was quiet.
    private var reachableSince: MonotonicTime?
    private var ended = false
    private var webSocketQuiet = false

    init(settings: Settings = Settings()) { self.settings = settings }

    /// Whether to probe the signaling server now: something is quiet and it was not reached yet.
    var wantsProbes: Bool { (stalledSince != nil || webSocketQuiet) && reachableSince == nil && !ended }

    mutating func observe(_ signals: Signals, now: MonotonicTime) -> [Action] {
        guard !ended else { return [] }
        var actions: [Action] = []
        let path = quietPath(signals, now: now)
        let socket = quietWebSocket(signals, now: now)
        webSocketQuiet = socket != nil
        switch (stalledSince, path) {
        case (nil, let cause?):
            stalledSince = now
            actions.append(.stalled(cause: cause))
        case (let since?, nil):
            stalledSince = nil
            actions.append(.resumed(afterNanoseconds: now.nanoseconds - since.nanoseconds))
        default: break
        }
        if path == nil && socket == nil { reachableSince = nil }
        if let reachable = reachableSince {
            let waited = now.nanoseconds - reachable.nanoseconds
            if let path, waited >= settings.pathGraceNanoseconds {
                ended = true
                actions.append(.end(reason: "the signaling server answers again but this connection does not (\(path))"))
            } else if let socket, waited >= settings.webSocketGraceNanoseconds {
                ended = true
                actions.append(.end(reason: "the signaling server answers again but this WebSocket does not (\(socket))"))
            }
        }
        return actions
    }

    /// A probe reached the signaling server: the network is back.
    mutating func probeAnswered(now: MonotonicTime) {
        guard wantsProbes else { return }
        reachableSince = now
    }

    /// Why the path is quiet, or nil while consent or media is recent.
    private func quietPath(_ signals: Signals, now: MonotonicTime) -> String? {
        guard let consentAt = signals.consentAt else { return nil }
        let consentAge = now.nanoseconds - consentAt.nanoseconds
        let mediaAge = signals.mediaAt.map { now.nanoseconds - $0.nanoseconds } ?? .max
        guard consentAge >= settings.pathQuietNanoseconds, mediaAge >= settings.pathQuietNanoseconds else { return nil }
        return "no ICE consent answer for \(Self.seconds(consentAge)) s" + (signals.mediaAt == nil ? "" : ", no media for \(Self.seconds(mediaAge)) s")
    }

    private func quietWebSocket(_ signals: Signals, now: MonotonicTime) -> String? {
        guard let heardAt = signals.webSocketAt, now.nanoseconds - heardAt.nanoseconds >= settings.webSocketQuietNanoseconds else { return nil }
        return "nothing on the WebSocket for \(Self.seconds(now.nanoseconds - heardAt.nanoseconds)) s"
    }

    private static func seconds(_ nanoseconds: Int64) -> String {
        String(Double(nanoseconds / 100_000_000) / 10)
    }
}
