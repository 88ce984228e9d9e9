import Foundation
import LoadGen
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import PeerConnection
import STUN
import Transport
import WireCoding

/// The socket side of a `LoadGenerator`: one WebSocket (the recorder's signaling) and one UDP
/// socket (all publishers, BUNDLE), on one event loop, so the generator runs without locks.
/// Timers fire on a fixed quantum so hundreds of publishers cost one wake-up, not one each.
final class LoadServer: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `eventLoop`.
    let eventLoop: EventLoop
    private let generator: LoadGenerator<SocketAddress>
    private let udp: Channel
    private let tickNanoseconds: Int64
    private var webSocket: Channel?
    private var timer: Scheduled<Void>?
    private var timerDeadline: MonotonicTime?
    private let finished: EventLoopPromise<Void>
    private(set) var datagramsSent = 0
    /// Errors the UDP socket reported (a send the kernel refused, ICMP unreachable).
    var socketErrors = 0
    /// The datagrams counted as sent when NIO closed the media socket before the end (it closes
    /// a UDP socket on most failed sends): every later "sent" one went nowhere.
    private(set) var socketClosedAfter: Int?

    func socketClosed() {
        if case .ended = generator.phase { return }
        socketClosedAfter = socketClosedAfter ?? datagramsSent
    }

    init(generator: LoadGenerator<SocketAddress>, udp: Channel, tickMilliseconds: Int) {
        eventLoop = udp.eventLoop
        self.generator = generator
        self.udp = udp
        tickNanoseconds = Int64(tickMilliseconds) * 1_000_000
        finished = udp.eventLoop.makePromise()
    }

    /// Completes when the session has ended and its last messages were sent.
    var done: EventLoopFuture<Void> { finished.futureResult }

    func attach(webSocket channel: Channel) {
        eventLoop.assertInEventLoop()
        guard webSocket == nil else {
            _ = channel.close()  // one recorder per run
            return
        }
        webSocket = channel
    }

    /// The floor benchmark: media straight to `remote`, no signaling (see `FloorKeys`).
    func startFloor(remote: SocketAddress) throws {
        eventLoop.assertInEventLoop()
        try generator.startWithoutSignaling(remote: remote, now: LoadClock.now())
        schedule()
    }

    func received(message: String) {
        apply(generator.handle(message: message, now: LoadClock.now()))
    }

    func received(datagram: [UInt8], from address: SocketAddress) {
        // Answers (STUN, DTLS, RTX) go back where the request came from.
        apply(generator.handle(datagram: datagram, from: address, now: LoadClock.now()), to: address)
    }

    func webSocketClosed() {
        webSocket = nil
        if case .ended = generator.phase {} else { apply(generator.handle(message: #"{"type":"disconnect"}"#, now: LoadClock.now())) }
        finishIfEnded()
    }

    private func apply(_ output: LoadGenerator<SocketAddress>.Output, to address: SocketAddress? = nil) {
        if let target = address ?? generator.peer.remote, !output.datagrams.isEmpty {
            // One buffer for the batch, sent as slices of it: one allocation per tick, not
            // one per datagram. No promise per datagram either (that allocates too); failures
            // reach DatagramHandler.errorCaught and are counted there.
            var batch = udp.allocator.buffer(capacity: output.datagrams.reduce(0) { $0 + $1.count })
            for datagram in output.datagrams { batch.writeBytes(datagram) }
            for datagram in output.datagrams {
                guard let slice = batch.readSlice(length: datagram.count) else { break }
                udp.write(AddressedEnvelope(remoteAddress: target, data: slice), promise: nil)
            }
            udp.flush()  // one sendmmsg for the batch
            datagramsSent += output.datagrams.count
        }
        if let webSocket {
            for message in output.messages {
                var buffer = webSocket.allocator.buffer(capacity: message.utf8.count)
                buffer.writeString(message)
                webSocket.write(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
            }
            if !output.messages.isEmpty { webSocket.flush() }
            if output.close {
                let close = WebSocketFrame(fin: true, opcode: .connectionClose, data: webSocket.allocator.buffer(bytes: [0x03, 0xE8]))
                webSocket.writeAndFlush(close).whenComplete { _ in _ = webSocket.close() }
            }
        }
        finishIfEnded()
        schedule()
    }

    private func finishIfEnded() {
        if case .ended = generator.phase, webSocket == nil { finished.succeed(()) }
    }

    private func schedule() {
        guard let deadline = generator.nextDeadline else { return }
        let next = MonotonicTime(nanoseconds: max(deadline.nanoseconds, LoadClock.now().nanoseconds + tickNanoseconds / 4))
        let quantized = MonotonicTime(nanoseconds: (next.nanoseconds + tickNanoseconds - 1) / tickNanoseconds * tickNanoseconds)
        if let timerDeadline, timerDeadline <= quantized, timer != nil { return }
        timer?.cancel()
        timerDeadline = quantized
        timer = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(quantized.nanoseconds))) { [self] in
            timer = nil
            timerDeadline = nil
            apply(generator.tick(now: LoadClock.now()))
        }
    }
}

/// Datagrams from the recorder into the server.
final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    var server: LoadServer?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let server else { return }
        server.received(datagram: Array(envelope.data.readableBytesView), from: envelope.remoteAddress)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let server else { return }
        server.socketErrors += 1  // UDP carries on
        // The first says what kind; the rest are counted (an ICMP storm would flood the log).
        if server.socketErrors == 1 { FileHandle.standardError.write(Data("recbot-loadgen: media socket error: \(error)\n".utf8)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        server?.socketClosed()
        context.fireChannelInactive()
    }
}

/// The recorder's signaling WebSocket: text frames in, close handled.
final class SignalingHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame
    let server: LoadServer

    init(server: LoadServer) { self.server = server }

    func handlerAdded(context: ChannelHandlerContext) { server.attach(webSocket: context.channel) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            server.received(message: String(buffer: frame.unmaskedData))
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) { server.webSocketClosed() }
}
