import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PeerConnection
import STUN
import SystemClock
import WireCoding

/// The socket side of a `PeerConnectionCore`: UDP sockets on the allowed host addresses.
/// The core runs on one event loop, without locks: timer firings and the datagrams go into it;
/// its datagrams go out; its events go to the handler, on that loop, and what the handler
/// feeds the core (feedback: a keyframe request, say) goes out in the same turn. The sockets are read on a
/// thread of their own into a `ReceiveBacklog`, which the core's loop drains (control first).
public final class UDPTransport: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `eventLoop` (checked by preconditions).
    public let eventLoop: EventLoop
    public let localAddresses: [TransportAddress]
    /// The sockets by their address; on `eventLoop` (a socket NIO closed is bound again).
    private var channels: [TransportAddress: Channel]
    /// The thread that reads the sockets (and nothing else).
    private let readers: MultiThreadedEventLoopGroup
    private let box: HandlerBox
    public let backlog: ReceiveBacklog
    var core: PeerConnectionCore?
    private var onEvent: ((TransportEvent) -> Void)?
    /// TCP/TLS connections to TURN servers, by `RelayServer.id` (see RelayStreamConnections.swift).
    var streamChannels: [Int: Channel] = [:]
    var relayTrust = RelayTrust()
    let logger: Logger
    private var timer: DeadlineTimer?
    private var timerDeadline: MonotonicTime?
    /// Inside one drain of the backlog the timer is rescheduled once after it, not once per
    /// datagram (it showed in profiles).
    private var timerStale = false
    private var overload = OverloadLog()
    /// The core's pauses the backlog follows (`ReceiveBacklog.followPausedVideo`).
    private var pausedVideoGeneration = 0
    /// The time the core is given; its deadlines are scheduled as delays from it.
    let clock: any TimeSource

    private init(eventLoop: EventLoop, channels: [TransportAddress: Channel], readers: MultiThreadedEventLoopGroup, box: HandlerBox,
                 backlog: ReceiveBacklog, clock: any TimeSource, logger: Logger) {
        self.eventLoop = eventLoop
        self.clock = clock
        self.channels = channels
        self.readers = readers
        self.box = box
        self.backlog = backlog
        self.localAddresses = channels.keys.sorted { $0.description < $1.description }
        self.logger = logger
    }

    /// Media datagrams handled per task before the loop's timers get their turn. Sockets on
    /// this loop (TCP relays) are not read while drains stay queued: NIO empties its task queue
    /// before it polls, which is why signaling runs on a loop of its own.
    static let mediaPerTurn = 256

    static let datagramsPerRead = 32
    static let datagramSlotBytes = 9_000

    /// The UDP receive buffer asked for per socket.
    public static let receiveBufferBytes: SocketOptionValue = 16 << 20

    /// What the kernel dropped on these sockets so far (nil where /proc cannot be read).
    public func kernelReceiveDrops() -> Int? {
        KernelReceiveDrops.read(ports: Set(localAddresses.map(\.port)))
    }

    /// The receive buffer the kernel actually granted (Linux reports twice the usable size).
    public func grantedReceiveBufferBytes() async throws -> [Int] {
        var sizes: [Int] = []
        for channel in await openChannels() {
            sizes.append(Int(try await channel.getOption(ChannelOptions.socketOption(.so_rcvbuf)).get()))
        }
        return sizes
    }

    /// Binds one UDP socket (ephemeral port) per address.
    public static func bind(addresses: [IPAddress], on eventLoop: EventLoop, backlogLimits: ReceiveBacklog.Limits = .init(),
                            clock: any TimeSource = SystemTimeSource(),
                            logger: Logger = Logger(label: "recbot.transport")) async throws -> UDPTransport {
        var channels: [TransportAddress: Channel] = [:]
        let box = HandlerBox()
        let backlog = ReceiveBacklog(limits: backlogLimits)
        let readers = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        if (try? await readers.next().submit({ ReaderPriority.raiseCurrentThread() }).get()) == nil, ReaderPriority.firstRefusal() {
            logger.info("the sockets' thread runs at recbot's own priority (raising it needs root, CAP_SYS_NICE or LimitNICE=-10): past capacity the kernel may drop datagrams unread, audio included")
        }
        for ip in addresses {
            let bound: Channel
            do { bound = try await bindReader(ip, on: readers.next(), box: box, backlog: backlog, loop: eventLoop, clock: clock) } catch {
                for channel in channels.values { try? await channel.close() }
                try? await readers.shutdownGracefully()
                throw error
            }
            guard let local = bound.localAddress.flatMap(TransportAddress.init(socketAddress:)) else { continue }
            channels[local] = bound
        }
        let transport = UDPTransport(eventLoop: eventLoop, channels: channels, readers: readers, box: box, backlog: backlog, clock: clock,
                                     logger: logger)
        box.transport = transport
        let bound = channels
        eventLoop.execute { for (local, channel) in bound { transport.watch(channel, local: local) } }
        return transport
    }

    private static func bindReader(_ ip: IPAddress, on readLoop: EventLoop, box: HandlerBox, backlog: ReceiveBacklog,
                                   loop: EventLoop, clock: any TimeSource) async throws -> Channel {
        try await bootstrap(on: readLoop, box: box, backlog: backlog, loop: loop, clock: clock).bind(host: ip.description, port: 0).get()
    }

    private static func bootstrap(on readLoop: EventLoop, box: HandlerBox, backlog: ReceiveBacklog, loop: EventLoop,
                                  clock: any TimeSource) -> DatagramBootstrap {
        DatagramBootstrap(group: readLoop)
            .channelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            // Bursts (keyframes from many senders, a burst of data-channel messages) must
            // not overflow the socket while the sockets' thread waits for a core; the kernel's
            // default is about 200 KiB. 16 MiB holds about 150 ms of 500 publishers' media (the
            // kernel counts each datagram's buffer, about twice its bytes). Linux caps this at
            // net.core.rmem_max; what waits beyond it waits in the ReceiveBacklog.
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: UDPTransport.receiveBufferBytes)
            // recvmmsg: up to 32 datagrams per system call (all publishers arrive on this one
            // socket, so under load reads come in batches). NIO splits the receive buffer into
            // that many slots, each larger than any RTP or DTLS datagram a sender should
            // produce; a bigger one is truncated by the kernel and then fails SRTP
            // authentication (counted), never parsed as whole.
            .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: UDPTransport.datagramsPerRead)
            .channelOption(ChannelOptions.recvAllocator,
                           value: FixedSizeRecvByteBufferAllocator(capacity: UDPTransport.datagramSlotBytes * UDPTransport.datagramsPerRead))
            .channelInitializer { channel in
                channel.pipeline.addHandler(DatagramHandler(box: box, backlog: backlog, coreLoop: loop, clock: clock))
            }
    }

    /// The open sockets, read on the loop that owns them.
    private func openChannels() async -> [Channel] {
        await withCheckedContinuation { continuation in eventLoop.execute { continuation.resume(returning: Array(self.channels.values)) } }
    }

    // MARK: Sockets that NIO closes

    /// NIO closes a datagram socket on a failed send (all but EMSGSIZE and EHOSTUNREACH): a
    /// firewall that drops (EPERM) or a route that went away (ENETUNREACH) during an outage
    /// would end the connection for good, though the peer still knows this address and port
    /// and answers once the network is back. Such a socket is bound again, on the same address
    /// and port, every half second until that holds, so the connection comes back with the network.
    private func watch(_ channel: Channel, local: TransportAddress) {
        channel.closeFuture.whenComplete { [weak self] _ in
            guard let self else { return }
            self.eventLoop.execute { self.socketClosed(channel, local: local) }
        }
    }

    private func socketClosed(_ channel: Channel, local: TransportAddress) {
        eventLoop.preconditionInEventLoop()
        guard core != nil, channels[local] === channel else { return }  // closing, or already replaced
        channels[local] = nil
        logger.notice("a socket was closed by a failed send (the network may be down); binding it again", metadata: ["address": "\(local)"])
        rebind(local)
    }

    private func rebind(_ local: TransportAddress) {
        _ = DeadlineTimer.schedule(at: clock.now().adding(milliseconds: 500), clock: clock, on: eventLoop) { [weak self] in
            guard let self, self.core != nil, let address = try? local.socketAddress() else { return }
            Self.bootstrap(on: self.readers.next(), box: self.box, backlog: self.backlog, loop: self.eventLoop, clock: self.clock)
                .bind(to: address)
                .hop(to: self.eventLoop).whenComplete { result in
                    switch result {
                    case .success(let channel):
                        guard self.core != nil else { channel.close(promise: nil); return }
                        self.channels[local] = channel
                        self.watch(channel, local: local)
                    case .failure:
                        self.rebind(local)
                    }
                }
        }
    }

    /// Starts the core (and connects its TCP/TLS relays); `onEvent` is called on the event loop
    /// for every event, and whatever it feeds the core there (feedback: a keyframe wanted, say)
    /// is sent in the same turn.
    public func run(_ core: PeerConnectionCore, relayTrust: RelayTrust = RelayTrust(), onEvent: @escaping (TransportEvent) -> Void) {
        eventLoop.execute(confined: (core, onEvent)) { confined in
            let (core, onEvent) = confined
            self.core = core
            self.onEvent = onEvent
            self.relayTrust = relayTrust
            self.feed(.start)
            // Datagrams read before the core was here (their drain found no transport).
            self.drainBacklog()
            for server in core.relayStreams { self.connectRelay(server) }
        }
    }

    /// Feeds `input` to the core on the event loop, at the clock's time (nothing happens when
    /// the transport is closed).
    public func handle(_ input: PeerConnectionInput) {
        eventLoop.execute(confined: input) { input in self.feed(input) }
    }

    /// Runs `body` with the core and the time on the event loop, waits for it, and sends what
    /// it fed the core (nothing runs when the transport is closed).
    public func perform(_ body: @escaping (PeerConnectionCore, MonotonicTime) -> Void) async {
        try? await eventLoop.submit(confined: body) { body in
            guard let core = self.core else { return }
            body(core, self.clock.now())
            self.pollCore()
        }.get()
    }

    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute {
                self.feed(.close)
                self.timer?.cancel()
                self.core = nil
                // The handler usually captures this transport: dropping it breaks the cycle, so
                // a session that rejoins many times does not keep every old connection alive.
                self.onEvent = nil
                continuation.resume()
            }
        }
        for channel in await openChannels() { try? await channel.close() }
        try? await readers.shutdownGracefully()
        let streams = await withCheckedContinuation { continuation in
            eventLoop.execute { continuation.resume(returning: Array(self.streamChannels.values)) }
        }
        for channel in streams { try? await channel.close() }
    }

    /// Handles what the sockets' thread read: every control datagram, then a turn's share of
    /// media; schedules itself again while more wait, so due timers interleave.
    fileprivate func drainBacklog() {
        eventLoop.preconditionInEventLoop()
        let batch = backlog.take(maxMedia: Self.mediaPerTurn)
        if batch.more { eventLoop.execute { self.drainBacklog() } }
        guard let core else { return }
        let now = clock.now()
        if let oldest = batch.oldestMediaArrival {
            // First, so a decision to shed applies to this batch already.
            core.handle(.receiveWait(nanoseconds: max(0, now.nanoseconds - oldest.nanoseconds)), now: now)
            pollCore(inReadBatch: true)
            if core.pausedVideoGeneration != pausedVideoGeneration {
                // The sockets' thread drops the paused streams' new pictures from now on.
                pausedVideoGeneration = core.pausedVideoGeneration
                backlog.followPausedVideo(core.pausedVideoBoundaries)
            }
        }
        for datagram in batch.datagrams {
            core.handle(.datagram(datagram.bytes, from: datagram.from, to: datagram.to, readAt: datagram.arrival), now: now)
            pollCore(inReadBatch: true)
        }
        if let report = overload.observe(backlog.counters, now: now) { report.log(to: logger) }
        if timerStale {
            timerStale = false
            rescheduleTimer()
        }
    }

    /// Feeds the core at the clock's time and does what it answers.
    func feed(_ input: PeerConnectionInput) {
        eventLoop.preconditionInEventLoop()
        guard let core else { return }
        core.handle(input, now: clock.now())
        pollCore()
    }

    /// Does everything the core has queued: sends, relay writes, events (whose feedback joins
    /// the queue); then waits for its next deadline (once per read batch).
    private func pollCore(inReadBatch: Bool = false) {
        eventLoop.preconditionInEventLoop()
        guard let core else { return }
        while let output = core.poll() {
            switch output {
            case .transmit(let datagram): send(datagram)
            case .streamWrite(let write): writeStream(write)
            case .closeStream(let link): closeStream(link)
            case .event(let event): onEvent?(event)
            }
        }
        if inReadBatch { timerStale = true } else { rescheduleTimer() }
    }

    private func send(_ datagram: PeerConnectionOutput.Datagram) {
        guard let channel = channels[datagram.from], let remote = try? datagram.to.socketAddress() else {
            logger.debug("no socket for datagram", metadata: ["from": "\(datagram.from)", "to": "\(datagram.to)"])
            return
        }
        var buffer = channel.allocator.buffer(capacity: datagram.bytes.count)
        buffer.writeBytes(datagram.bytes)
        channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: buffer), promise: nil)
    }

    /// Timers fire on this grid. The core's deadline moves with nearly every gap a lossy
    /// stream sees: each exact deadline was a wakeup and a pass over every stream, and at 128
    /// publishers with 5 % loss and 30 ms of jitter timers took two fifths of the CPU. No
    /// protocol here needs its timer closer than this (NACK retries are 20 ms apart or more).
    static let timerGranularityNanoseconds: Int64 = 5_000_000

    private func rescheduleTimer() {
        guard let core else { return }
        let next = core.nextTimeout.map(Self.onTimerGrid)
        guard next != timerDeadline else { return }
        timer?.cancel()
        timerDeadline = next
        guard let next else { return }
        timer = DeadlineTimer.schedule(at: next, clock: clock, on: eventLoop) { [self] in
            // A simulated clock's timer may have been queued just before it was moved.
            guard timerDeadline == next else { return }
            timerDeadline = nil
            feed(.timeout)
        }
    }
}

extension UDPTransport {
    /// The first grid instant at or after `deadline`.
    static func onTimerGrid(_ deadline: MonotonicTime) -> MonotonicTime {
        let grid = timerGranularityNanoseconds
        let (quotient, remainder) = deadline.nanoseconds.quotientAndRemainder(dividingBy: grid)
        guard remainder > 0, quotient < Int64.max / grid else { return deadline }
        return MonotonicTime(nanoseconds: (quotient + 1) * grid)
    }
}

/// Lets the channel handlers reach the transport created after them.
private final class HandlerBox: @unchecked Sendable {
    weak var transport: UDPTransport?
}

private final class DatagramHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: used only on its channel's (the sockets' thread's) loop.
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let box: HandlerBox
    let backlog: ReceiveBacklog
    let coreLoop: EventLoop
    /// Stamps each datagram as it is read: the core's wait for it is the overload signal.
    let clock: any TimeSource

    init(box: HandlerBox, backlog: ReceiveBacklog, coreLoop: EventLoop, clock: any TimeSource) {
        (self.box, self.backlog, self.coreLoop, self.clock) = (box, backlog, coreLoop, clock)
    }

    /// The socket's own address, read once (Channel.localAddress takes a lock on every call).
    private var local: TransportAddress?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        if local == nil { local = context.channel.localAddress.flatMap(TransportAddress.init(socketAddress:)) }
        guard let local, let from = TransportAddress(socketAddress: envelope.remoteAddress) else { return }
        guard backlog.push(read: envelope.data, from: from, to: local, arrival: clock.now()) else { return }
        let box = box
        coreLoop.execute { box.transport?.drainBacklog() }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // ICMP port unreachable and the like: UDP carries on.
    }
}
