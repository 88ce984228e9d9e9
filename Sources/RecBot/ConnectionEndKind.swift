import Outcomes
import PeerConnection
import SoraSignalingCore

/// Which ends of a connection to Sora a rejoin may cure. Final: Sora ended the session (close
/// 1000, `close` on the signaling channel, a disconnect by API), said no (a 4xxx rejection,
/// a TURN server that refuses the credentials), or recbot cannot work with what it says
/// (configuration, an offer it cannot answer). Everything else is the network or a server
/// going away, and joining again is worth it.
enum ConnectionEndKind {
    static func isRejoinable(_ end: SignalingSessionEnd, transportFailure: TransportFailure?) -> Bool {
        switch end.cause {
        case .requested, .serverClosed: return false
        case .connectionLost: return true
        case .transportFailed:
            if case .relay(let failure) = transportFailure, failure.isAuthentication { return false }
            return true
        }
    }

    /// Signaling failed before an offer.
    static func outcome(of error: SignalingError) -> SessionConnection.Outcome {
        switch error {
        case .rejected(let code, _): return .init(ending: SessionEnding(.rejected, "rejected: close \(code)"), rejoinable: false)
        case .invalidURL, .invalidJSON: return .init(ending: SessionEnding(.invalidConfiguration, "configuration: \(error)"), rejoinable: false)
        case .malformedMessage: return .init(ending: SessionEnding(.protocolViolation, "protocol: \(error)"), rejoinable: false)
        case .connectFailed, .timeout:
            // Nothing answered: the network may be dark, or the server restarting.
            return .init(ending: SessionEnding(.connectionLost, "signaling: \(error)"), rejoinable: true, unreachable: true)
        case .closedBeforeOffer:
            return .init(ending: SessionEnding(.connectionLost, "signaling: \(error)"), rejoinable: true)
        }
    }

    /// The offer could not be answered or the transport not set up.
    static func outcome(ofAnswerFailure ending: SessionEnding) -> SessionConnection.Outcome {
        // No usable local address may come back (an interface that is down); an offer recbot
        // cannot answer or a relay-only session without TURN servers will not.
        .init(ending: ending, rejoinable: ending.cause == .connectionLost)
    }
}
