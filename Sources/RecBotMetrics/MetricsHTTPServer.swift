import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// `GET /metrics` in the Prometheus text format, on plain SwiftNIO HTTP/1.1 (one small
/// endpoint needs no web framework). Anything else is 404; methods other than GET and HEAD 405.
public final class MetricsHTTPServer: Sendable {
    private let channel: Channel
    /// Where it listens (the real port when asked for port 0).
    public let port: Int

    private init(channel: Channel) {
        self.channel = channel
        port = channel.localAddress?.port ?? 0
    }

    /// Listens on `host:port`; throws when the address cannot be bound (in use, not local).
    public static func start(host: String, port: Int, registry: PrometheusCollectorRegistry, group: EventLoopGroup) async throws -> MetricsHTTPServer {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(registry: registry))
                    }
                }
            }
            .bind(host: host, port: port).get()
        return MetricsHTTPServer(channel: channel)
    }

    public func close() async {
        try? await channel.close()
    }
}

final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): request = head
        case .body: break  // a scrape has no body; anything sent is ignored
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        let status: HTTPResponseStatus
        var body: [UInt8]
        var contentType = "text/plain; charset=utf-8"
        switch (head.method, path) {
        case (.GET, "/metrics"), (.HEAD, "/metrics"):
            status = .ok
            body = registry.emitToBuffer()
            contentType = "text/plain; version=0.0.4; charset=utf-8"
        case (.GET, _), (.HEAD, _):
            status = .notFound
            body = Array("recbot serves its metrics at /metrics\n".utf8)
        default:
            status = .methodNotAllowed
            body = Array("only GET and HEAD\n".utf8)
        }
        var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", "\(body.count)")])
        if status == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        if head.method == .HEAD { body = [] }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil) }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        if !head.isKeepAlive {
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
