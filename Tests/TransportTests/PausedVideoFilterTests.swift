import Foundation
import Logging
import PeerConnection
import STUN
import SystemClock
import Testing
@testable import Transport

/// The kernel runs `PausedVideoFilter`'s program on a real socket: what it lets through is
/// what `PausedVideo.sheds` (the backlog's check) would keep, datagram for datagram.
@Suite struct PausedVideoFilterTests {
    static let loopback = IPAddress("127.0.0.1")!

    static func rtp(ssrc: UInt32, timestamp: UInt32, marker: Bool = false, sequence: UInt16) -> [UInt8] {
        func word(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        return [0x80, (marker ? 0x80 : 0) | 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF)] + word(timestamp) + word(ssrc)
            + [UInt8](repeating: 0xAB, count: 40)
    }

    /// Sends `datagrams` through a socket filtered for `boundaries`, then a marker that always
    /// passes, and returns what arrived before the marker.
    func passed(_ datagrams: [[UInt8]], boundaries: [UInt32: UInt32]) async throws -> [[UInt8]] {
        let receiving = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 4 << 20)
        let sending = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        defer {
            receiving.close()
            sending.close()
        }
        try receiving.setFilter(PausedVideoFilter.program(boundaries: boundaries)).get()
        let backlog = ReceiveBacklog()
        let reader = DatagramReader.start(receiving, into: backlog, clock: SystemTimeSource(), logger: Logger(label: "test")) {}
        let marker: [UInt8] = [0x00, 0x01, 0x00, 0x00] + [UInt8](repeating: 0x42, count: 16)  // a STUN-looking datagram
        for datagram in datagrams { try sending.send(datagram, to: receiving.local).get() }
        try sending.send(marker, to: receiving.local).get()
        var taken: [[UInt8]] = []
        let start = Date()
        while true {
            taken += backlog.take(maxMedia: 100_000).datagrams.map(\.bytes)
            // The backlog hands control (the marker) before media: wait for both to be in.
            if taken.contains(marker), backlog.counters.waitingBytes == 0 || Date().timeIntervalSince(start) > 30 { break }
            if Date().timeIntervalSince(start) > 30 { break }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        await reader.stop()
        taken += backlog.take(maxMedia: 100_000).datagrams.map(\.bytes)
        #expect(taken.contains(marker), "the marker arrived")
        return taken.filter { $0 != marker }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    static func sorted(_ datagrams: [[UInt8]]) -> [[UInt8]] { datagrams.sorted { $0.lexicographicallyPrecedes($1) } }

    @Test func dropsOnlyThePausedStreamsNewerPictures() async throws {
        let paused: UInt32 = 0x1111_1111, wrapping: UInt32 = 0x2222_2222, running: UInt32 = 0x3333_3333
        let boundaries: [UInt32: UInt32] = [paused: 1_000, wrapping: 0xFFFF_FFF0]
        let kept: [[UInt8]] = [
            Self.rtp(ssrc: paused, timestamp: 1_000, sequence: 1),  // the boundary's own picture
            Self.rtp(ssrc: paused, timestamp: 999, sequence: 2),  // an older one (late, or a retransmission)
            Self.rtp(ssrc: wrapping, timestamp: 0xFFFF_FFE0, sequence: 3),
            Self.rtp(ssrc: running, timestamp: 5_000, marker: true, sequence: 4),
            // RTCP from the paused stream (packet type 200 where RTP's marker and type would be).
            [0x80, 200, 0x00, 0x06] + [0x11, 0x11, 0x11, 0x11] + [UInt8](repeating: 0, count: 20),
            [0x80, 0xE0, 0x00, 0x01, 0x00, 0x00],  // too short to be RTP: passes for the backlog to judge
            [0x16, 0xFE, 0xFD] + [UInt8](repeating: 0, count: 30),  // DTLS
        ]
        let dropped: [[UInt8]] = [
            Self.rtp(ssrc: paused, timestamp: 1_001, sequence: 5),
            Self.rtp(ssrc: paused, timestamp: 1_000 &+ 0x7FFF_FFFF, marker: true, sequence: 6),
            Self.rtp(ssrc: wrapping, timestamp: 0x10, sequence: 7),  // newer across the wrap
        ]
        let arrived = try await passed(dropped + kept, boundaries: boundaries)
        #expect(arrived == Self.sorted(kept), "\(arrived.count) arrived, \(kept.count) expected")
    }

    /// Random streams and timestamps: the kernel keeps exactly what the backlog's check keeps.
    @Test func agreesWithTheBacklogsCheck() async throws {
        var generator = SystemRandomNumberGenerator()
        let ssrcs = (0..<40).map { _ in UInt32.random(in: 1...UInt32.max, using: &generator) }
        let boundaries = Dictionary(ssrcs.prefix(30).map { ($0, UInt32.random(in: 0...UInt32.max, using: &generator)) }, uniquingKeysWith: { a, _ in a })
        var model = PausedVideo()
        model.follow(boundaries)
        var datagrams: [[UInt8]] = []
        var expected: [[UInt8]] = []
        for sequence in 0..<400 {
            let ssrc = ssrcs.randomElement(using: &generator)!
            let near = boundaries[ssrc].map { $0 &+ UInt32(bitPattern: Int32.random(in: -3_000...3_000, using: &generator)) }
            let timestamp = Bool.random(using: &generator) ? (near ?? 0) : UInt32.random(in: 0...UInt32.max, using: &generator)
            let datagram = Self.rtp(ssrc: ssrc, timestamp: timestamp, marker: Bool.random(using: &generator), sequence: UInt16(sequence))
            datagrams.append(datagram)
            if !model.sheds(ssrc: ssrc, timestamp: timestamp) { expected.append(datagram) }
        }
        let arrived = try await passed(datagrams, boundaries: boundaries)
        #expect(arrived == Self.sorted(expected), "\(arrived.count) arrived, \(expected.count) expected of \(datagrams.count)")
    }

    @Test func nothingPausedDetachesAndAFullHouseStaysUnderTheKernelsLimit() async throws {
        #expect(PausedVideoFilter.program(boundaries: [:]).isEmpty)
        let many = Dictionary(uniqueKeysWithValues: (1...1_500).map { (UInt32($0), UInt32(0)) })
        let program = PausedVideoFilter.program(boundaries: many)
        #expect(program.count <= 4_096)
        let socket = try DatagramSocket.open(Self.loopback, receiveBufferBytes: 1 << 20)
        defer { socket.close() }
        // The kernel takes as many streams as its socket option memory holds (halving from the
        // most one program can cover): this host's net.core.optmem_max decides how many.
        let covered = try socket.filterPausedVideo(many).get()
        #expect(covered >= 8 && covered <= PausedVideoFilter.maximumStreams, "\(covered) streams")
        #expect(try socket.filterPausedVideo(many, maximumStreams: covered).get() == covered, "a replacement fits too")
        // An empty program removes the filter: what it dropped passes again.
        let datagram = Self.rtp(ssrc: 7, timestamp: 10, sequence: 1)
        #expect(try await passed([datagram], boundaries: [:]) == [datagram])
    }

    /// Once the filter has dropped datagrams a socket's own count holds them too; the
    /// namespace's overflow counters do not.
    @Test func theNamespacesOverflowCountersAreRead() {
        let snmp = """
        Ip: Forwarding DefaultTTL
        Ip: 1 64
        Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
        Udp: 100 2 37 90 35 0 0 0 0
        UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
        UdpLite: 0 0 0 0 9 0 0 0 0
        """
        #expect(KernelReceiveDrops.parseSNMP(snmp) == 35)
        #expect(KernelReceiveDrops.parseSNMP6("Udp6InErrors                    \t4\nUdp6RcvbufErrors                \t3\n") == 3)
        #expect(KernelReceiveDrops.parseSNMP("Udp: InDatagrams\n") == nil)
        #expect(KernelReceiveDrops.namespaceOverflows() != nil, "this machine has /proc/net/snmp")
    }
}
