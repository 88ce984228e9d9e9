import Foundation
import Logging
import NIOCore
import NIOSSL
import NIOWebSocket
import TLSFailure
import WebSocketKit
import SoraSignalingCore

/// One signaling WebSocket (websocket-kit on SwiftNIO): text frames in as an async stream,
/// text out. The stream is bounded; an overflow is counted and logged, never a crash.
public final class SignalingConnection: @unchecked Sendable {
    public let url: String
    public let messages: AsyncStream<String>
    private let socket: WebSocket
    private let continuation: AsyncStream<String>.Continuation
    private let drops: EventCounter
    private let heard: EventCounter
    public static let bufferedMessages = 4_096

    private init(url: String, socket: WebSocket, messages: AsyncStream<String>, continuation: AsyncStream<String>.Continuation,
                 drops: EventCounter, heard: EventCounter) {
        self.url = url
        self.socket = socket
        self.messages = messages
        self.continuation = continuation
        self.drops = drops
        self.heard = heard
    }

    /// Frames received so far (messages and pongs): the session's watch samples it to see
    /// whether the WebSocket still carries anything.
    public var framesHeard: Int { heard.count }

    /// A WebSocket ping; its pong counts in `framesHeard`.
    public func sendPing() { socket.sendPing() }

    /// Messages dropped because the stream was full (logged once, when the first is).
    public var droppedMessages: Int { drops.count }

    /// Wires the socket into the stream. websocket-kit wants this on the socket's event loop (onUpgrade).
    private static func attach(_ socket: WebSocket, to stream: AsyncStream<String>.Continuation, url: String, drops: EventCounter,
                               heard: EventCounter, logger: Logger) {
        socket.onText { _, text in
            _ = heard.add()
            if case .dropped = stream.yield(text), drops.add() == 1 {
                logger.error("signaling messages dropped: consumer too slow (counted; total at the end)", metadata: ["url": "\(url)"])
            }
        }
        socket.onPong { _, _ in _ = heard.add() }
        socket.onClose.whenComplete { _ in stream.finish() }
        // A connection that went dark (no close, no RST: a blackout, a dead NAT) is watched by
        // the session (its pings every 2 s, `framesHeard`), which keeps it through a short
        // outage; websocket-kit's own ping is only the backstop: unanswered for a whole
        // interval, it closes the socket with 1006.
        socket.pingInterval = keepaliveInterval
    }

    /// How long the TCP (and TLS) connect and the WebSocket upgrade may take together.
    public static let handshakeTimeout = TimeAmount.seconds(10)

    /// websocket-kit's pings: a connection silent for one to two of these is closed.
    public static let keepaliveInterval = TimeAmount.seconds(30)

    public func send(_ text: String) { socket.send(text) }

    /// The WebSocket close code, once closed (4490 and other 4xxx codes mean rejection).
    public var closeCode: Int? {
        socket.closeCode.map { Int(UInt16(webSocketErrorCode: $0)) }
    }

    public var isClosed: Bool { socket.isClosed }

    public func close() async {
        try? await socket.close(code: .normalClosure).get()
    }

    /// Opens a WebSocket to `url` (ws or wss; certificates verified unless `insecure`).
    static func open(url: String, insecure: Bool, group: EventLoopGroup, logger: Logger) async throws(SignalingError) -> SignalingConnection {
        guard var components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), scheme == "ws" || scheme == "wss",
              components.host != nil else {
            throw .invalidURL(url)
        }
        // Schemes are case-insensitive (RFC 3986 §3.1) but websocket-kit asserts lower case: WSS:// once trapped.
        components.scheme = scheme
        let connectURL = components.string ?? url
        var tls = TLSConfiguration.makeClientConfiguration()
        if insecure { tls.certificateVerification = .none }
        var configuration = WebSocketClient.Configuration(tlsConfiguration: scheme == "wss" ? tls : nil, maxFrameSize: 8 << 20)
        configuration.maxAccumulatedFrameSize = 8 << 20
        var streamContinuation: AsyncStream<String>.Continuation!
        let messages = AsyncStream(bufferingPolicy: .bufferingOldest(SignalingConnection.bufferedMessages)) { streamContinuation = $0 }
        let stream = streamContinuation!
        // websocket-kit's future can complete before onUpgrade hands over the socket: wait for onUpgrade.
        let handoff = SocketHandoff()
        let (drops, heard) = (EventCounter(), EventCounter())
        let socket: WebSocket
        do {
            socket = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    handoff.start(continuation)
                    // websocket-kit fails its future when the server answers other than 101, but not
                    // when the connection closes before any answer (a load balancer whose backend
                    // is down accepts and closes): without this the opener, and the join, waited
                    // forever. So the upgrade has a deadline of its own.
                    let timer = group.any().scheduleTask(in: handshakeTimeout) {
                        handoff.fail(SignalingError.connectFailed(url: url, detail: "no WebSocket upgrade within \(handshakeTimeout.nanoseconds / 1_000_000_000) s (the server closed or never answered)"))
                    }
                    WebSocket.connect(to: connectURL, configuration: configuration, on: group) { socket in
                        timer.cancel()
                        attach(socket, to: stream, url: url, drops: drops, heard: heard, logger: logger)
                        // Too late (timed out, cancelled): nobody will use it.
                        if !handoff.succeed(socket) { _ = socket.close(code: .goingAway) }
                    }
                    .whenFailure { error in
                        timer.cancel()
                        handoff.fail(error)
                    }
                }
            } onCancel: {
                handoff.fail(CancellationError())
            }
        } catch let error as SignalingError {
            stream.finish()
            throw error
        } catch {
            stream.finish()
            let tls = TLSFailure.describe(error, serverName: components.host ?? url, trustHint: "--insecure accepts any certificate, for test servers only")
            throw .connectFailed(url: url, detail: tls ?? "\(error)")
        }
        return SignalingConnection(url: url, socket: socket, messages: messages, continuation: stream, drops: drops, heard: heard)
    }
}

/// Counts from the socket's event loop (drops, frames heard); read from anywhere.
private final class EventCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// The new total.
    func add() -> Int { lock.withLock { value += 1; return value } }
    var count: Int { lock.withLock { value } }
}

/// Resumes the opener exactly once: with the upgraded socket, or with the connect error.
private final class SocketHandoff: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<WebSocket, Error>?

    private var done = false

    /// An outcome that came before the opener waited (a cancellation) is kept for it.
    private var early: Error?

    func start(_ continuation: CheckedContinuation<WebSocket, Error>) {
        let early = lock.withLock { () -> Error? in
            if let early = self.early { return early }
            self.continuation = continuation
            return nil
        }
        if let early { continuation.resume(throwing: early) }
    }

    /// The waiting opener, once: nil when it was resumed already (or is not waiting yet, in
    /// which case `error`, if any, is kept for it).
    private func take(orKeep error: Error? = nil) -> CheckedContinuation<WebSocket, Error>? {
        lock.withLock {
            guard !done else { return nil }
            guard let waiting = continuation else {
                if let error { (early, done) = (error, true) }
                return nil
            }
            (continuation, done) = (nil, true)
            return waiting
        }
    }

    /// False when the opener gave up already: the socket is the caller's to close.
    func succeed(_ socket: WebSocket) -> Bool {
        guard let waiting = take() else { return false }
        waiting.resume(returning: socket)
        return true
    }

    func fail(_ error: Error) { take(orKeep: error)?.resume(throwing: error) }
}
