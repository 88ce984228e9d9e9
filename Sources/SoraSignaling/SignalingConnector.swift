import Foundation
import Logging
import NIOCore
import SoraSignalingCore

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

    public static func start(urls: [String], options: ConnectOptions, insecure: Bool, group: EventLoopGroup,
                             timeoutSeconds: Double, logger: Logger) async throws(SignalingError) -> SignalingStart {
        guard !urls.isEmpty else { throw .invalidURL("(none)") }
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        do {
            return try await withDeadline(deadline) {
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
                        try await Task.sleep(nanoseconds: 20_000_000)  // let the close code settle
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

    /// The first URL whose WebSocket opens; sockets that open later close themselves.
    static func race(urls: [String], insecure: Bool, group: EventLoopGroup, logger: Logger) async throws -> SignalingConnection {
        if urls.count == 1 { return try await SignalingConnection.open(url: urls[0], insecure: insecure, group: group, logger: logger) }
        let race = Race(candidates: urls.count)
        return try await withCheckedThrowingContinuation { continuation in
            race.start(continuation)
            for url in urls {
                Task {
                    do {
                        let connection = try await SignalingConnection.open(url: url, insecure: insecure, group: group, logger: logger)
                        if !race.win(connection) { await connection.close() }
                    } catch {
                        logger.info("signaling candidate failed", metadata: ["url": "\(url)", "error": "\(error)"])
                        race.lose(error)
                    }
                }
            }
        }
    }
}

private final class Race: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<SignalingConnection, Error>?
    private var remaining: Int
    private var lastError: Error?

    init(candidates: Int) { remaining = candidates }

    func start(_ continuation: CheckedContinuation<SignalingConnection, Error>) { lock.withLock { self.continuation = continuation } }

    /// True when `connection` is the first to open.
    func win(_ connection: SignalingConnection) -> Bool {
        let waiting = lock.withLock { () -> CheckedContinuation<SignalingConnection, Error>? in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: connection)
        return waiting != nil
    }

    func lose(_ error: Error) {
        let waiting = lock.withLock { () -> CheckedContinuation<SignalingConnection, Error>? in
            remaining -= 1
            lastError = error
            guard remaining == 0 else { return nil }
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(throwing: lastError ?? SignalingError.connectFailed(url: "", detail: "no candidate opened"))
    }
}

struct DeadlineExceeded: Error {}

/// Runs `body`, failing with `DeadlineExceeded` at `deadline`.
func withDeadline<T: Sendable>(_ deadline: Date, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            // Clamped: a deadline centuries away is a long wait, not a trap converting to UInt64.
            try await Task.sleep(nanoseconds: UInt64(min(max(0, deadline.timeIntervalSinceNow), 1e9) * 1_000_000_000))
            throw DeadlineExceeded()
        }
        guard let result = try await group.next() else { throw DeadlineExceeded() }
        group.cancelAll()
        return result
    }
}
