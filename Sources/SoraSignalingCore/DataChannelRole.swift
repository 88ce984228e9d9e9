/// What a data channel is for, from its label (sora-protocol.md §7). Signaling messages are
/// acted on only on the channel that carries them: a `re-offer` on `notify`, or a `ping` on
/// a channel Sora never named, is stored, never obeyed.
public enum DataChannelRole: Equatable, Sendable {
    /// `re-offer` / `close` in, `re-answer` / `disconnect` (and `pong`) out.
    case signaling
    case notify
    case push
    /// `req-stats` in, `stats` out.
    case stats
    /// A messaging channel (`#label`): every message is logged.
    case messaging
    /// `e2ee` and `rpc`: logged, not interpreted.
    case e2ee
    case rpc
    /// A label Sora does not define: logged, and counted.
    case unknown

    public init(label: String) {
        switch label {
        case "signaling": self = .signaling
        case "notify": self = .notify
        case "push": self = .push
        case "stats": self = .stats
        case "e2ee": self = .e2ee
        case "rpc": self = .rpc
        default: self = label.hasPrefix("#") ? .messaging : .unknown
        }
    }

    /// Channels whose messages are stored as they are, without parsing them as signaling.
    public var isLoggedVerbatim: Bool {
        switch self {
        case .messaging, .e2ee, .rpc, .unknown: true
        case .signaling, .notify, .push, .stats: false
        }
    }
}
