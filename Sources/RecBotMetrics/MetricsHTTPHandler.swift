import NIOCore
import NIOHTTP1
import Prometheus

/// Answers one request at a time (NIO's pipelining handler holds the next until a response has
/// ended), within `MetricsServerLimits`: a deadline per request, a bounded body, and no answer
/// while the client has not read the last ones (so pipelined requests cannot pile responses up
/// in memory; the pipelining handler then reads no more).
final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: PrometheusCollectorRegistry
    private let limits: MetricsServerLimits
    private var request: HTTPRequestHead?
    private var bodyBytes = 0
    /// A request whose answer waits for the client to read the earlier ones.
    private var waiting: HTTPRequestHead?
    private var deadline: Scheduled<Void>?

    private let connections: ConnectionTable

    init(registry: PrometheusCollectorRegistry, limits: MetricsServerLimits, connections: ConnectionTable) {
        self.registry = registry
        self.limits = limits
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armDeadline(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        armDeadline(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
            bodyBytes = 0
            connections.setBusy(context.channel, true)
        case .body(let chunk):
            // A scrape has no body; a large one is not a scrape.
            bodyBytes += chunk.readableBytes
            if bodyBytes > limits.maximumBodyBytes { context.close(promise: nil) }
        case .end:
            guard let head = request else { return }
            request = nil
            if context.channel.isWritable { respond(to: head, context: context) } else { waiting = head }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let head = waiting {
            waiting = nil
            respond(to: head, context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Closes the connection unless a request ends (and is answered) in time.
    private func armDeadline(context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: limits.requestDeadline) { channel.close(promise: nil) }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (status, body, contentType) = answer(head)
        var headers = HTTPHeaders([("Content-Type", contentType), ("Content-Length", "\(body.count)")])
        if status == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD, !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: written)
        let channel = context.channel
        if head.isKeepAlive {
            let connections = self.connections
            written.futureResult.whenComplete { _ in connections.setBusy(channel, false) }
            armDeadline(context: context)
        } else {
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    private func answer(_ head: HTTPRequestHead) -> (HTTPResponseStatus, [UInt8], String) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        switch (head.method, path) {
        case (.GET, "/metrics"), (.HEAD, "/metrics"):
            return (.ok, registry.emitToBuffer(), "text/plain; version=0.0.4; charset=utf-8")
        case (.GET, _), (.HEAD, _):
            return (.notFound, Array("recbot serves its metrics at /metrics\n".utf8), "text/plain; charset=utf-8")
        default:
            return (.methodNotAllowed, Array("only GET and HEAD\n".utf8), "text/plain; charset=utf-8")
        }
    }
}
