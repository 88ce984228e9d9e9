import Synchronization

/// Ends a dispatcher's `run` without cutting off a request under way. Cancelling the run
/// would: the attempt then gives its lease back as if nothing had been sent, and whoever
/// claims the row next sends it again although the receiver may already have it. Once asked
/// to stop, the run claims nothing more and returns when its last attempt is stored.
public final class DispatchStop: Sendable {
    private struct State {
        var stopping = false
        /// Claims and attempts under way.
        var busy = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Asks the run to stop claiming. True when nothing is under way: the run may be cancelled
    /// at once (it is only waiting for the next claim), and no claim starts after this.
    public func request() -> Bool {
        state.withLock { state in
            state.stopping = true
            return state.busy == 0
        }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Before a claim: false once stopping (the claim is not made).
    func beginClaim() -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.busy += 1
            return true
        }
    }

    /// After a claim that returned `rows` rows, each now an attempt under way.
    func endClaim(rows: Int) { state.withLock { $0.busy += rows - 1 } }

    func attemptEnded() { state.withLock { $0.busy -= 1 } }
}
