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
    private let connections: NIOLockedValueBox<Int>
    /// Where it listens (the real port when asked for port 0).
    public let port: Int

    private init(channel: Channel, connections: NIOLockedValueBox<Int>) {
        self.channel = channel
        self.connections = connections
        port = channel.localAddress?.port ?? 0
    }

    /// Connections open now.
    public var openConnections: Int { connections.withLockedValue { $0 } }

    /// Listens on `host:port`; throws when the address cannot be bound (in use, not local).
    public static func start(host: String, port: Int, registry: PrometheusCollectorRegistry, group: EventLoopGroup,
                             limits: MetricsServerLimits = MetricsServerLimits()) async throws -> MetricsHTTPServer {
        let connections = NIOLockedValueBox(0)
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
                guard admit(channel, connections: connections, limit: limits.maximumConnections) else {
                    return channel.close()
                }
                return channel.pipeline.configureHTTPServerPipeline(withDecoderLimitConfiguration: decoderLimits).flatMap {
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(registry: registry, limits: limits))
                    }
                }
            }
            .bind(host: host, port: port).get()
        return MetricsHTTPServer(channel: channel, connections: connections)
    }

    /// Counts the connection while it is open; false when the cap is reached.
    private static func admit(_ channel: Channel, connections: NIOLockedValueBox<Int>, limit: Int) -> Bool {
        let admitted = connections.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
        if admitted { channel.closeFuture.whenComplete { _ in connections.withLockedValue { $0 -= 1 } } }
        return admitted
    }

    public func close() async {
        try? await channel.close()
    }
}
