import ICE

/// Where a `join` session is, for `recbot join`'s status lines and the metrics.
public enum SessionPhase: Equatable, Sendable, CustomStringConvertible {
    case starting
    case signaling
    /// Connecting the media path, with ICE's state.
    case ice(ICEState)
    case recording
    /// The connection was lost; a rejoin follows.
    case connectionLost
    case rejoining(attempt: Int)
    /// Finishing the files and the catalog.
    case finalizing

    public var description: String {
        switch self {
        case .starting: "starting"
        case .signaling: "signaling"
        case .ice(let state): "ICE \(state)"
        case .recording: "recording"
        case .connectionLost: "connection lost"
        case .rejoining(let attempt): "rejoining (attempt \(attempt))"
        case .finalizing: "finalizing"
        }
    }
}
