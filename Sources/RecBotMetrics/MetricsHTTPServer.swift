import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// How much of the machine a scraper (or anyone else who can reach the port) may hold.
public struct MetricsServerLimits: Sendable {
    /// Connections open at once; more are closed as they arrive.
    public var maximumConnections = 32
    /// From a connection's start, or its last response, to the end of its next request: a
    /// client that sends a byte every few seconds (slowloris) or never reads is closed.
    public var requestDeadline = TimeAmount.seconds(10)
    /// A request's headers, and its body (a scrape has none).
    public var maximumHeaderBytes = 16 << 10
    public var maximumBodyBytes = 16 << 10
    /// Responses the client has not read yet, per connection, before no more requests are read.
    public var writeBufferHighWaterMark = 256 << 10

    public init() {}
}

/// `GET /metrics` in the Prometheus text format, on plain SwiftNIO HTTP/1.1 (one small
/// endpoint needs no web framework). Anything else is 404; methods other than GET and HEAD 405.
public final class MetricsHTTPServer: Sendable {
    private let channel: Channel
    private let connections: ConnectionTable
    /// Where it listens (the real port when asked for port 0).
    public let port: Int

    private init(channel: Channel, connections: ConnectionTable) {
        self.channel = channel
        self.connections = connections
        port = channel.localAddress?.port ?? 0
    }

    /// Connections open now.
    public var openConnections: Int { connections.count }

    /// Listens on `host:port`; throws when the address cannot be bound (in use, not local).
    public static func start(host: String, port: Int, registry: PrometheusCollectorRegistry, group: EventLoopGroup,
                             limits: MetricsServerLimits = MetricsServerLimits()) async throws -> MetricsHTTPServer {
        let connections = ConnectionTable(limit: limits.maximumConnections)
        let decoderLimits = {
            var configuration = NIOHTTPDecoderLimitConfiguration()
            (configuration.maxHeaderFieldSize, configuration.maxHeaderListSize, configuration.maxHeaderFieldCount) =
                (limits.maximumHeaderBytes, limits.maximumHeaderBytes, 100)
            return configuration
        }()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.writeBufferWaterMark,
                                value: .init(low: limits.writeBufferHighWaterMark / 2, high: limits.writeBufferHighWaterMark))
            .childChannelInitializer { channel in
                guard connections.admit(channel) else { return channel.close() }
                return channel.pipeline.configureHTTPServerPipeline(withDecoderLimitConfiguration: decoderLimits).flatMap {
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(registry: registry, limits: limits,
                                                                                          connections: connections))
                    }
                }
            }
            .bind(host: host, port: port).get()
        return MetricsHTTPServer(channel: channel, connections: connections)
    }

    public func close() async {
        try? await channel.close()
    }
}

/// The open connections in the order they came, each idle (between requests) or busy (a
/// request under way). At the cap the oldest idle one is closed to make room, so clients that
/// hold connections open without asking (or trickle a request's headers) cannot keep a scrape
/// out; only when every connection is busy is a new one refused.
final class ConnectionTable: Sendable {
    private struct State {
        var busy: [ObjectIdentifier: Bool] = [:]
        /// Arrival order, for "the oldest idle".
        var order: [(id: ObjectIdentifier, channel: Channel)] = []
    }

    private let limit: Int
    private let state = NIOLockedValueBox(State())

    init(limit: Int) { self.limit = limit }

    var count: Int { state.withLockedValue { $0.order.count } }

    /// Counts `channel` while it is open, closing the oldest idle connection when the cap is
    /// reached; false when every connection is busy.
    func admit(_ channel: Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let (admitted, evicted) = state.withLockedValue { state -> (Bool, Channel?) in
            var evicted: Channel?
            if state.order.count >= limit {
                guard let oldest = state.order.firstIndex(where: { state.busy[$0.id] == false }) else { return (false, nil) }
                evicted = state.order.remove(at: oldest).channel
                state.busy[ObjectIdentifier(evicted!)] = nil
            }
            state.order.append((id, channel))
            state.busy[id] = false
            return (true, evicted)
        }
        evicted?.close(promise: nil)
        if admitted { channel.closeFuture.whenComplete { [weak self] _ in self?.remove(id) } }
        return admitted
    }

    func setBusy(_ channel: Channel, _ busy: Bool) {
        state.withLockedValue { state in
            let id = ObjectIdentifier(channel)
            if state.busy[id] != nil { state.busy[id] = busy }
        }
    }

    private func remove(_ id: ObjectIdentifier) {
        state.withLockedValue { state in
            guard state.busy.removeValue(forKey: id) != nil else { return }
            state.order.removeAll { $0.id == id }
        }
    }
}
