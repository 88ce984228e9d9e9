import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PeerConnection
import STUN
import Synchronization
import SystemClock
import WireCoding

/// The socket side of a `PeerConnectionCore`: UDP sockets on the allowed host addresses.
/// The core runs on one event loop, without locks: timer firings and the datagrams go into it;
/// its datagrams go out; its events go to the handler, on that loop, and what the handler
/// feeds the core (feedback: a keyframe request, say) goes out in the same turn. The sockets are read on a
/// thread of their own into a `ReceiveBacklog`, which the core's loop drains (control first);
/// the loop sends on them directly.
public final class UDPTransport: @unchecked Sendable {
    // @unchecked: every mutable field is touched only on `eventLoop` (checked by preconditions).
    public let eventLoop: EventLoop
    public let localAddresses: [TransportAddress]
    /// The sockets by their address. A failed send (a firewall's EPERM during an outage) loses
    /// that datagram only: the socket stays, and the connection comes back with the network.
    private let sockets: [TransportAddress: DatagramSocket]
    /// One thread per socket that reads it (and nothing else).
    private let readers: [DatagramReader]
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
    /// The most streams a `PausedVideoFilter` program was taken with, and whether the kernel
    /// refused it outright (the backlog then drops paused video after reading it, as before).
    private var filterStreams = PausedVideoFilter.maximumStreams
    private var filterRefused = false
    /// The time the core is given; its deadlines are scheduled as delays from it.
    let clock: any TimeSource

    private init(eventLoop: EventLoop, sockets: [TransportAddress: DatagramSocket], readers: [DatagramReader],
                 backlog: ReceiveBacklog, clock: any TimeSource, logger: Logger) {
        self.eventLoop = eventLoop
        self.clock = clock
        self.sockets = sockets
        self.readers = readers
        self.backlog = backlog
        self.localAddresses = sockets.keys.sorted { $0.description < $1.description }
        self.logger = logger
    }

    /// Media datagrams handled per task before the loop's timers get their turn. Sockets on
    /// this loop (TCP relays) are not read while drains stay queued: NIO empties its task queue
    /// before it polls, which is why signaling runs on a loop of its own.
    static let mediaPerTurn = 256

    /// The UDP receive buffer asked for per socket. Bursts (keyframes from many senders, a
    /// burst of data-channel messages) must not overflow it while the sockets' thread waits for
    /// the CPU; the kernel's default is about 200 KiB. 16 MiB holds about 150 ms of 500
    /// publishers' media (the kernel counts each datagram's buffer, about twice its bytes).
    /// Linux caps it at net.core.rmem_max; what waits beyond it waits in the ReceiveBacklog.
    public static let receiveBufferBytes = 16 << 20

    /// What the kernel dropped on these sockets so far because their buffers were full, and what
    /// `PausedVideoFilter` dropped (nil where /proc cannot be read). A socket's own count holds
    /// both; once the filter has been attached, the namespace's overflows since the bind bound
    /// the first (exact when recbot's sockets are the only ones overflowing, as in a container)
    /// and the rest counts as filtered.
    public func kernelDrops() -> KernelDrops? {
        guard let sockets = KernelReceiveDrops.read(ports: Set(localAddresses.map(\.port))) else { return nil }
        guard filterAttached.load(ordering: .relaxed), let baseline = overflowBaseline,
              let overflows = KernelReceiveDrops.namespaceOverflows() else { return KernelDrops(overflowed: sockets, filtered: 0) }
        let overflowed = min(sockets, max(0, overflows - baseline))
        return KernelDrops(overflowed: overflowed, filtered: sockets - overflowed)
    }

    /// The namespace's receive-buffer overflows when the sockets were bound.
    private let overflowBaseline = KernelReceiveDrops.namespaceOverflows()
    /// Set once `PausedVideoFilter` has been attached to the sockets.
    private let filterAttached = Atomic<Bool>(false)

    /// The receive buffer the kernel actually granted (Linux reports twice the usable size).
    public func grantedReceiveBufferBytes() -> [Int] {
        localAddresses.compactMap { sockets[$0]?.grantedReceiveBufferBytes() }
    }

    /// Binds one UDP socket (ephemeral port) per address, each read by a thread of its own.
    public static func bind(addresses: [IPAddress], on eventLoop: EventLoop, backlogLimits: ReceiveBacklog.Limits = .init(),
                            clock: any TimeSource = SystemTimeSource(),
                            logger: Logger = Logger(label: "recbot.transport")) async throws -> UDPTransport {
        var sockets: [TransportAddress: DatagramSocket] = [:]
        for ip in addresses {
            do {
                let socket = try DatagramSocket.open(ip, receiveBufferBytes: receiveBufferBytes)
                sockets[socket.local] = socket
            } catch {
                for socket in sockets.values { socket.close() }
                throw error
            }
        }
        let backlog = ReceiveBacklog(limits: backlogLimits)
        let box = HandlerBox()
        let readers = sockets.values.map { socket in
            DatagramReader.start(socket, into: backlog, clock: clock, logger: logger) {
                eventLoop.execute { box.transport?.drainBacklog() }
            }
        }
        let transport = UDPTransport(eventLoop: eventLoop, sockets: sockets, readers: readers, backlog: backlog, clock: clock,
                                     logger: logger)
        box.transport = transport
        return transport
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
        for reader in readers { await reader.stop() }
        // On the loop, where sends happen: no send can reach a descriptor number reused after.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            eventLoop.execute {
                for socket in self.sockets.values { socket.close() }
                continuation.resume()
            }
        }
        let streams = await withCheckedContinuation { continuation in
            eventLoop.execute { continuation.resume(returning: Array(self.streamChannels.values)) }
        }
        for channel in streams { try? await channel.close() }
    }

    /// Handles what the sockets' thread read: every control datagram, then a turn's share of
    /// media; schedules itself again while more wait, so due timers interleave.
    fileprivate func drainBacklog() {
        eventLoop.preconditionInEventLoop()
        var batch = backlog.take(maxMedia: Self.mediaPerTurn)
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
                filterPausedVideo(core.pausedVideoBoundaries)
            }
        }
        for index in batch.datagrams.indices {
            // Moved out of the batch, so the core holds the only reference and decrypts in place.
            var bytes: [UInt8] = []
            swap(&bytes, &batch.datagrams[index].bytes)
            let datagram = batch.datagrams[index]
            core.handle(.datagram(consume bytes, from: datagram.from, to: datagram.to, readAt: datagram.arrival), now: now)
            pollCore(inReadBatch: true)
        }
        if let report = overload.observe(backlog.counters, now: now) { report.log(to: logger) }
        if timerStale {
            timerStale = false
            rescheduleTimer()
        }
    }

    /// Has the kernel drop the paused streams' new pictures before they are queued (the
    /// backlog's check stays for what the filter misses). A refusal is logged once and the
    /// filter is not tried again: the backlog drops them as before, after reading them.
    private func filterPausedVideo(_ boundaries: [UInt32: UInt32]) {
        guard !filterRefused else { return }
        for address in localAddresses {
            guard let socket = sockets[address] else { continue }
            switch socket.filterPausedVideo(boundaries, maximumStreams: filterStreams) {
            case .success(let covered):
                // What the kernel took once it takes again: later programs start there.
                if covered < boundaries.count {
                    filterStreams = min(filterStreams, covered)
                    logger.debug("the socket filter covers part of the paused video; the backlog drops the rest after reading it",
                                 metadata: ["covered": "\(covered)", "paused": "\(boundaries.count)"])
                }
                if covered > 0 { filterAttached.store(true, ordering: .relaxed) }
            case .failure(let error):
                filterRefused = true
                logger.info("paused video is dropped after reading it: the kernel refused the socket filter", metadata: ["error": "\(error)"])
                return
            }
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
        guard let socket = sockets[datagram.from] else {
            logger.debug("no socket for datagram", metadata: ["from": "\(datagram.from)", "to": "\(datagram.to)"])
            return
        }
        if case .failure(let error) = socket.send(datagram.bytes, to: datagram.to) {
            logger.debug("a datagram was not sent", metadata: ["error": "\(error)"])
        }
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

/// Lets the readers reach the transport created after them.
private final class HandlerBox: @unchecked Sendable {
    // @unchecked: set once, before any reader can wake the loop that reads it.
    weak var transport: UDPTransport?
}
