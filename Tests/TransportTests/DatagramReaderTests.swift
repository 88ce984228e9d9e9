import Foundation
import Synchronization
import Logging
import STUN
import SystemClock
import Testing
@testable import Transport
import WireCoding

/// recbot's own UDP sockets and their reader threads: what a read delivers (bytes, source,
/// destination, cut at the slot's size), that a failed send leaves the socket reading, and
/// that a reader blocked on an idle socket ends when asked.
@Suite struct DatagramReaderTests {
    static let loopback = IPAddress("127.0.0.1")!

    /// Waits (up to 30 s, a busy machine's allowance) until `count` datagrams wait in `backlog`.
    /// It takes once more after the deadline: in CI's full suite one sleep on the starved shared
    /// pool outlasted the whole allowance, and the loop ended without looking again.
    func take(_ count: Int, from backlog: ReceiveBacklog) async throws -> [ReceiveBacklog.Datagram] {
        var taken: [ReceiveBacklog.Datagram] = []
        let start = Date()
        while true {
            taken += backlog.take(maxMedia: 10_000).datagrams
            guard taken.count < count, Date().timeIntervalSince(start) < 30 else { return taken }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    @Test func aReadDeliversEachDatagramWithItsAddressesAndCutsTheOversized() async throws {
        let receiving = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        let sending = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        let backlog = ReceiveBacklog()
        let wakes = Wakes()
        let reader = DatagramReader.start(receiving, into: backlog, clock: SystemTimeSource(), logger: Logger(label: "test")) { wakes.add() }
        for index in 0..<200 {
            try sending.send([0x80, 0x60, 0, UInt8(index)] + [UInt8](repeating: UInt8(index), count: 100), to: receiving.local).get()
        }
        try sending.send([UInt8](repeating: 0x80, count: 12_000), to: receiving.local).get()
        let taken = try await take(201, from: backlog)
        await reader.stop()
        receiving.close()
        sending.close()
        #expect(taken.count == 201)
        #expect(taken.allSatisfy { $0.from == sending.local && $0.to == receiving.local })
        #expect(taken.prefix(200).enumerated().allSatisfy { index, datagram in datagram.bytes.count == 104 && datagram.bytes[3] == UInt8(index) },
                "in order, whole")
        #expect(taken.last?.bytes.count == DatagramReader.slotBytes, "a datagram larger than its slot is cut to it")
        #expect(wakes.count >= 1 && wakes.count <= 201)
    }

    /// NIO closed its datagram socket on a failed send (a firewall's EPERM during an outage),
    /// and recbot had to bind it again; recbot's own socket loses the datagram and goes on.
    @Test func aFailedSendLeavesTheSocketReading() async throws {
        let socket = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        let peer = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        let backlog = ReceiveBacklog()
        let reader = DatagramReader.start(socket, into: backlog, clock: SystemTimeSource(), logger: Logger(label: "test")) {}
        // Broadcast without SO_BROADCAST: the kernel refuses it (EACCES), as a firewall would.
        let refused = socket.send([1, 2, 3], to: TransportAddress(ip: IPAddress("255.255.255.255")!, port: 9))
        guard case .failure(let error) = refused else { Issue.record("the broadcast was sent"); return }
        #expect(error.errno == EACCES, "\(error)")
        try peer.send([0x00, 0x01, 0, 0], to: socket.local).get()
        try socket.send([0x00, 0x01, 0, 0], to: peer.local).get()
        let taken = try await take(1, from: backlog)
        await reader.stop()
        socket.close()
        peer.close()
        #expect(taken.count == 1, "still reading after the failed send")
    }

    @Test func anIdleReaderEndsWhenAsked() async throws {
        let socket = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        let reader = DatagramReader.start(socket, into: ReceiveBacklog(), clock: SystemTimeSource(), logger: Logger(label: "test")) {}
        try await Task.sleep(nanoseconds: 100_000_000)  // blocked in its read by now
        let start = Date()
        await reader.stop()
        socket.close()
        // A read that stop did not wake would block for ever; the bound is only for a starved
        // machine (CI once took 6.2 s amid the whole suite), not a speed target.
        #expect(Date().timeIntervalSince(start) < 30, "stop wakes the blocked read")
        let closed = socket.send([1], to: socket.local)
        guard case .failure(let error) = closed else { Issue.record("a closed socket sent"); return }
        #expect(error.errno == EBADF)
    }

    @Test func aBindToAnAddressThisHostDoesNotHaveFailsWithItsErrno() {
        #expect(throws: DatagramSocketError.self) { try DatagramSocket.open(IPAddress("192.0.2.1")!, receiveBufferBytes: 1 << 20) }
    }
}

private final class Wakes: Sendable {
    private let counter = Mutex(0)
    func add() { counter.withLock { $0 += 1 } }
    var count: Int { counter.withLock { $0 } }
}
