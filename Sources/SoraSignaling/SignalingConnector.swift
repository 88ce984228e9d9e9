import Logging
import NIOCore
import SoraSignalingCore
import Synchronization
import WireCoding

/// How signaling got to an offer.
public struct SignalingStart: @unchecked Sendable {
    public var connection: SignalingConnection
    public var offer: OfferMessage
    /// Messages that came before the offer (e.g. notify), to be logged like the rest.
    public var earlier: [IncomingMessage]
    public var redirects: Int
}

/// Opens every signaling URL at once (sora-protocol.md §1.2): the first WebSocket to open
/// wins and gets `connect`; the others are closed. Follows `redirect` (§1.3) and waits for
/// the offer, all within `timeout`.
public enum SignalingConnector {
    public static let maximumRedirects = 3

    /// wss:, in any case (URL schemes are case-insensitive, RFC 3986 §3.1).
    public static func isSecure(_ url: String) -> Bool { url.prefix(6).lowercased() == "wss://" }

    /// `clock` times the whole attempt (the sockets' own connect timeouts are NIO's).
    public static func start(urls: [String], options: ConnectOptions, insecure: Bool, group: EventLoopGroup,
                             timeoutSeconds: Double, clock: any TimeSource, logger: Logger) async throws(SignalingError) -> SignalingStart {
        guard !urls.isEmpty else { throw .invalidURL("(none)") }
        // Clamped: a timeout of centuries is a long wait, not a trap converting to nanoseconds.
        let timeout = Int64(min(max(0, timeoutSeconds), 1e9) * 1e9)
        let deadline = clock.now().adding(nanoseconds: timeout)
        do {
            return try await withDeadline(deadline, clock: clock) {
                var connection = try await race(urls: urls, insecure: insecure, group: group, logger: logger)
                var redirects = 0
                var earlier: [IncomingMessage] = []
                connection.send(try options.connectMessage(redirect: false))
                while true {
                    var next: IncomingMessage?
                    for await text in connection.messages {
                        do {
                            let message = try IncomingMessage(parsing: text)
                            if case .offer = message { next = message; break }
                            if case .redirect = message { next = message; break }
                            earlier.append(message)
                        } catch {
                            logger.warning("unusable signaling message before the offer", metadata: ["error": "\(error)"])
                        }
                    }
                    switch next {
                    case .offer(let offer):
                        return SignalingStart(connection: connection, offer: offer, earlier: earlier, redirects: redirects)
                    case .redirect(let location):
                        redirects += 1
                        guard redirects <= maximumRedirects else { throw SignalingError.malformedMessage("more than \(maximumRedirects) redirects") }
                        // A redirect must not take a TLS connection to plain text (it would expose the
                        // metadata and whatever follows to the network).
                        if SignalingConnector.isSecure(connection.url) && !SignalingConnector.isSecure(location) {
                            throw SignalingError.malformedMessage("redirect from \(connection.url) to \(location) would drop TLS")
                        }
                        logger.notice("redirected", metadata: ["from": "\(connection.url)", "to": "\(location)"])
                        await connection.close()
                        connection = try await SignalingConnection.open(url: location, insecure: insecure, group: group, logger: logger)
                        connection.send(try options.connectMessage(redirect: true))
                    default:
                        // The stream ended: the server closed before an offer.
                        try await clock.sleep(nanoseconds: 20_000_000)  // let the close code settle
                        let code = connection.closeCode
                        if let code, code >= 4000 && code < 5000 { throw SignalingError.rejected(code: code, reason: "") }
                        throw SignalingError.closedBeforeOffer(code: code, reason: "")
                    }
                }
            }
        } catch let error as SignalingError {
            throw error
        } catch {
            throw .timeout("waiting for Sora's offer (\(Int(timeoutSeconds)) s)")
        }
    }

    /// The first URL whose WebSocket opens; sockets that open later close themselves. The race
    /// owns its candidates: a win cancels the rest, and so does cancelling the caller.
    static func race(urls: [String], insecure: Bool, group: EventLoopGroup, logger: Logger) async throws -> SignalingConnection {
        if urls.count == 1 { return try await SignalingConnection.open(url: urls[0], insecure: insecure, group: group, logger: logger) }
        let race = Race(candidates: urls.count)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                for url in urls {
                    race.add(Task {
                        do throws(SignalingError) {
                            let connection = try await SignalingConnection.open(url: url, insecure: insecure, group: group, logger: logger)
                            if !race.win(connection) { await connection.close() }
                        } catch {
                            logger.info("signaling candidate failed", metadata: ["url": "\(url)", "error": "\(error)"])
                            race.lose(error)
                        }
                    })
                }
            }
        } onCancel: {
            race.cancel()
        }
    }
}

/// The candidates of `race`, and the one wait they settle: the first to open, or the last
/// error once every one failed, or cancellation.
private final class Race: Sendable {
    private struct State {
        var continuation: CheckedContinuation<SignalingConnection, Error>?
        var remaining: Int
        var lastError: SignalingError?
        var candidates: [Task<Void, Never>] = []
        var cancelled = false
    }

    private let state: Mutex<State>

    init(candidates: Int) { state = Mutex(State(remaining: candidates)) }

    func start(_ continuation: CheckedContinuation<SignalingConnection, Error>) {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.continuation = continuation }
            return state.cancelled
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
    }

    /// A candidate added after the race is over is cancelled at once.
    func add(_ candidate: Task<Void, Never>) {
        let over = state.withLock { state in
            if !state.cancelled { state.candidates.append(candidate) }
            return state.cancelled
        }
        if over { candidate.cancel() }
    }

    /// True when `connection` is the first to open; the other candidates are cancelled.
    func win(_ connection: SignalingConnection) -> Bool {
        let (waiting, others) = settle()
        waiting?.resume(returning: connection)
        for task in others { task.cancel() }
        return waiting != nil
    }

    func lose(_ error: SignalingError) {
        let (waiting, failure) = state.withLock { state -> (CheckedContinuation<SignalingConnection, Error>?, SignalingError?) in
            state.remaining -= 1
            state.lastError = error
            guard state.remaining == 0 else { return (nil, nil) }
            defer { state.continuation = nil }
            return (state.continuation, state.lastError)
        }
        waiting?.resume(throwing: failure ?? SignalingError.connectFailed(url: "", detail: "no candidate opened"))
    }

    func cancel() {
        let (waiting, candidates) = settle()
        waiting?.resume(throwing: CancellationError())
        for task in candidates { task.cancel() }
    }

    /// Ends the race: the wait to resume (nil if already settled) and the candidates to cancel.
    private func settle() -> (CheckedContinuation<SignalingConnection, Error>?, [Task<Void, Never>]) {
        state.withLock { state in
            defer { (state.continuation, state.candidates, state.cancelled) = (nil, [], true) }
            return (state.continuation, state.candidates)
        }
    }
}

struct DeadlineExceeded: Error {}

/// Runs `body`, failing with `DeadlineExceeded` at `deadline` on `clock`.
func withDeadline<T: Sendable>(_ deadline: MonotonicTime, clock: any TimeSource, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await clock.sleep(until: deadline)
            throw DeadlineExceeded()
        }
        guard let result = try await group.next() else { throw DeadlineExceeded() }
        group.cancelAll()
        return result
    }
}
