import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PeerConnection
import STUN
import TLSFailure

/// How `turns:` servers are verified: the system's trust roots, or a PEM bundle (a private CA).
public struct RelayTrust: Sendable, Equatable {
    public var caFile: String?

    public init(caFile: String? = nil) { self.caFile = caFile }
}

/// The socket side of TCP and TLS relays: one connection per TURN server on the transport's
/// event loop; bytes read go to the core's framer, its stream writes come back here.
extension UDPTransport {
    func connectRelay(_ server: RelayServer) {
        eventLoop.preconditionInEventLoop()
        let link = server.id
        let sslContext: NIOSSLContext?
        do {
            sslContext = server.client.transport == .tls ? try makeSSLContext() : nil
        } catch {
            relayConnectionFailed(link, "TLS setup for \(server.name): \(error)")
            return
        }
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [weak self] channel in
                do {
                    if let sslContext {
                        // SNI and the certificate check use the URL's host name; an IP literal is
                        // checked against the chain only (SNI cannot carry it).
                        let handler = try NIOSSLClientHandler(context: sslContext, serverHostname: server.tlsServerName)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    let peerName = server.tlsServerName ?? server.client.server.ip.description
                    try channel.pipeline.syncOperations.addHandler(RelayStreamHandler(transport: self, link: link, peerName: peerName))
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
        let address = server.client.server
        bootstrap.connect(host: address.ip.description, port: Int(address.port)).whenComplete { [self] result in
            switch result {
            case .success(let channel):
                streamChannels[link] = channel
                logger.debug("TURN connection open", metadata: ["server": "\(server.name)"])
                feed(.relayConnected(link: link))
            case .failure(let error):
                relayConnectionFailed(link, "cannot connect to \(server.name): \(error)")
            }
        }
    }

    private func makeSSLContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let caFile = relayTrust.caFile { configuration.trustRoots = .file(caFile) }
        return try NIOSSLContext(configuration: configuration)
    }

    func relayConnectionFailed(_ link: Int, _ reason: String) {
        eventLoop.preconditionInEventLoop()
        streamChannels[link] = nil
        feed(.relayConnectionFailed(link: link, reason: reason))
    }

    func receiveStream(_ bytes: [UInt8], link: Int) {
        feed(.relayStream(bytes, link: link))
    }

    func writeStream(_ write: StreamWrite) {
        guard let channel = streamChannels[write.link] else { return }
        var buffer = channel.allocator.buffer(capacity: write.bytes.count)
        buffer.writeBytes(write.bytes)
        channel.writeAndFlush(buffer, promise: nil)
    }

    func closeStream(_ link: Int) {
        streamChannels.removeValue(forKey: link)?.close(promise: nil)
    }
}

private final class RelayStreamHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: used only on the channel's event loop, which is the transport's.
    typealias InboundIn = ByteBuffer
    weak var transport: UDPTransport?
    let link: Int
    /// The server's name as its certificate is checked (or its address), for TLS errors.
    let peerName: String
    private var reported = false

    init(transport: UDPTransport?, link: Int, peerName: String) {
        self.transport = transport
        self.link = link
        self.peerName = peerName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        transport?.receiveStream(Array(buffer.readableBytesView), link: link)
    }

    func channelInactive(context: ChannelHandlerContext) {
        report("the TURN server closed the connection")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        report("TURN connection: " + (TLSFailure.describe(error, serverName: peerName, trustHint: "--turn-ca-file names a CA file") ?? "\(error)"))
        context.close(promise: nil)
    }

    private func report(_ reason: String) {
        guard !reported else { return }
        reported = true
        transport?.relayConnectionFailed(link, reason)
    }
}
