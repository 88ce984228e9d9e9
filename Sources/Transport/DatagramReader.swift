import CDatagramSocket
import Foundation
import Logging
import STUN
import Synchronization
import SystemClock
import WireCoding

/// The thread that reads one socket into the receive backlog, and does nothing else.
///
/// It blocks in recvmmsg until a datagram comes and takes whatever else is waiting (up to a
/// batch) in the same call: one system call and one lock per batch, no poller, one clock read,
/// and the core's loop woken only when its backlog was idle. After a short read it waits a
/// millisecond, so datagrams come in batches even under light load. It runs ahead of the rest of
/// recbot (`ReaderPriority`), so past capacity the kernel's buffer still empties and the
/// backlog decides what is lost (control never, video before audio).
final class DatagramReader: Sendable {
    static let datagramsPerRead = 32
    /// Larger than any RTP or DTLS datagram a sender should produce; a bigger one is cut to
    /// this by the kernel and then fails SRTP authentication (counted), never parsed as whole.
    static let slotBytes = 9_000
    /// How long the thread lets datagrams gather after it emptied the socket. Woken for each
    /// one, it made a system call and woke the core's loop per datagram (a sixth of recbot's
    /// CPU with 256 audio publishers); a millisecond gathers a dozen there, costs nothing when
    /// reads come full, and is far below anything the protocols time (ICE's and DTLS's
    /// retransmissions are 50 ms and more apart). The kernel holds them meanwhile: a millisecond
    /// of 512 publishers is about 100 KiB of its buffer, a fortieth of the smallest default.
    static let gatherMicroseconds: UInt32 = 1_000

    private let socket: DatagramSocket
    private let stopping = Atomic<Bool>(false)
    private let exit = Mutex<ExitState>(.running)

    private enum ExitState {
        case running
        case awaited(CheckedContinuation<Void, Never>)
        case ended
    }

    private init(socket: DatagramSocket) { self.socket = socket }

    /// Starts reading `socket`; `wake` runs (on this thread) when the backlog asks for a drain.
    static func start(_ socket: DatagramSocket, into backlog: ReceiveBacklog, clock: any TimeSource, logger: Logger,
                      wake: @escaping @Sendable () -> Void) -> DatagramReader {
        let reader = DatagramReader(socket: socket)
        let thread = Thread {
            recbot_name_current_thread("recbot-sockets")
            reader.run(backlog: backlog, clock: clock, logger: logger, wake: wake)
        }
        thread.start()
        return reader
    }

    /// Wakes the thread and waits for it to end (the socket stays open for the caller to close).
    func stop() async {
        stopping.store(true, ordering: .releasing)
        socket.stopReading()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ended = exit.withLock { state -> Bool in
                if case .ended = state { return true }
                state = .awaited(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
    }

    private func run(backlog: ReceiveBacklog, clock: any TimeSource, logger: Logger, wake: @Sendable () -> Void) {
        if ReaderPriority.raiseCurrentThread() == nil, ReaderPriority.firstRefusal() {
            logger.info("the sockets' thread runs at recbot's own priority (raising it needs root, CAP_SYS_NICE or LimitNICE=-10): past capacity the kernel may drop datagrams unread, audio included")
        }
        let count = Self.datagramsPerRead
        let slots = UnsafeMutableRawBufferPointer.allocate(byteCount: count * Self.slotBytes, alignment: 16)
        let lengths = UnsafeMutableBufferPointer<UInt32>.allocate(capacity: count)
        let sources = UnsafeMutableBufferPointer<recbot_datagram_address>.allocate(capacity: count)
        defer {
            slots.deallocate()
            lengths.deallocate()
            sources.deallocate()
            finish()
        }
        var batch: [ReceiveBacklog.ReadDatagram] = []
        batch.reserveCapacity(count)
        var failures = ReadFailures()
        while !stopping.load(ordering: .acquiring) {
            let read = recbot_datagram_read(socket.fd, slots.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.slotBytes,
                                            UInt32(count), lengths.baseAddress, sources.baseAddress)
            if stopping.load(ordering: .acquiring) { break }
            guard read > 0 else {
                failures.note(errno: -read, socket: socket, logger: logger)
                continue
            }
            let arrival = clock.now()
            batch.removeAll(keepingCapacity: true)
            for index in 0..<Int(read) {
                guard let from = TransportAddress(sources[index]) else { continue }
                let start = index * Self.slotBytes
                let length = min(Int(lengths[index]), Self.slotBytes)
                batch.append(.init(bytes: UnsafeRawBufferPointer(rebasing: slots[start..<(start + length)]), from: from))
            }
            if backlog.push(read: batch, to: socket.local, arrival: arrival) { wake() }
            // A short read means the socket is empty: let the next datagrams gather for a
            // moment instead of waking for each one (see `gatherMicroseconds`).
            if Int(read) < count { usleep(Self.gatherMicroseconds) }
        }
    }

    private func finish() {
        let waiting = exit.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state = .ended }
            if case .awaited(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume()
    }
}

/// A read that failed. EINTR is retried at once; anything else (ENOMEM, say) is logged once
/// per kind and retried after a pause, so a persistent error neither spins nor floods the log.
private struct ReadFailures {
    private var logged: Set<Int32> = []

    mutating func note(errno: Int32, socket: DatagramSocket, logger: Logger) {
        guard errno != EINTR, errno != 0 else { return }
        if logged.insert(errno).inserted {
            logger.warning("reading a UDP socket failed; retrying",
                           metadata: ["error": "\(DatagramSocketError(operation: "read", address: "\(socket.local)", errno: errno))"])
        }
        usleep(10_000)
    }
}
