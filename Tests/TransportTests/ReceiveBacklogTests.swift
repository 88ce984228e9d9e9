import NIOCore
import NIOPosix
@testable import PeerConnection
import STUN
import Testing
@testable import Transport
import WireCoding

/// The receive backlog between the sockets' thread and the core: control before media, media
/// bounded and dropped first, one wake per idle period, and a log line per overload episode.
@Suite struct ReceiveBacklogTests {
    static let from = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 50_000)
    static let to = TransportAddress(ip: IPAddress("127.0.0.1")!, port: 40_000)

    static func datagram(_ bytes: [UInt8], arrival: Int64 = 0) -> ReceiveBacklog.Datagram {
        .init(bytes: bytes, from: from, to: to, arrival: MonotonicTime(nanoseconds: arrival))
    }
    static let rtp = [0x80, 0x60] + [UInt8](repeating: 1, count: 998)
    static let rtcp: [UInt8] = [0x80, 200, 0, 6] + [UInt8](repeating: 0, count: 24)
    static let stun: [UInt8] = [0x01, 0x01, 0, 0] + [UInt8](repeating: 0, count: 16)

    @Test func classesFollowRFC7983() {
        #expect(DatagramClass(firstBytes: Self.stun) == .control)
        #expect(DatagramClass(firstBytes: [22, 254, 253]) == .control, "DTLS (and the data channels inside it)")
        #expect(DatagramClass(firstBytes: Self.rtp) == .media)
        #expect(DatagramClass(firstBytes: [0x80, 0xE0]) == .media, "payload type 96 with the marker bit")
        #expect(DatagramClass(firstBytes: Self.rtcp) == .control)
        #expect(DatagramClass(firstBytes: [0x81, 205]) == .control, "transport feedback")
        #expect(DatagramClass(firstBytes: [0x40, 0x00, 0x03, 0xE8] + Self.rtp) == .media, "ChannelData carrying RTP")
        #expect(DatagramClass(firstBytes: [0x40, 0x00, 0x00, 0x14] + Self.stun) == .control, "ChannelData carrying STUN")
        #expect(DatagramClass(firstBytes: [0x40, 0x00]) == .control)
        #expect(DatagramClass(firstBytes: []) == .control)
        #expect(DatagramClass(firstBytes: [0x80]) == .media)
    }

    @Test func controlComesFirstAndMediaInTurns() {
        let backlog = ReceiveBacklog()
        #expect(backlog.push(Self.datagram(Self.rtp)), "an idle backlog asks for a drain")
        for _ in 0..<9 { #expect(!backlog.push(Self.datagram(Self.rtp)), "a drain is already pending") }
        #expect(!backlog.push(Self.datagram(Self.stun)))
        let first = backlog.take(maxMedia: 4)
        #expect(first.datagrams.map(\.bytes.count) == [Self.stun.count, 1_000, 1_000, 1_000, 1_000] && first.more)
        #expect(!backlog.push(Self.datagram(Self.rtcp)), "still pending while more wait")
        let second = backlog.take(maxMedia: 100)
        #expect(second.datagrams.first?.bytes == Self.rtcp && second.datagrams.count == 7 && !second.more)
        #expect(backlog.push(Self.datagram(Self.rtp)), "idle again: the next push wakes the drain")
        #expect(backlog.counters.waitingBytes == 1_000 + ReceiveBacklog.overheadBytes)
    }

    /// A paused video stream's new pictures are dropped as the socket reads them (before the
    /// copy and the queue); its last picture, other streams, RTCP and control go through.
    @Test func pausedVideoIsDroppedAsItIsRead() {
        let backlog = ReceiveBacklog()
        func push(_ bytes: [UInt8], arrival: MonotonicTime) {
            _ = bytes.withUnsafeBytes { backlog.push(read: [.init(bytes: $0, from: Self.from)], to: Self.to, arrival: arrival) }
        }
        func packet(ssrc: UInt32, timestamp: UInt32) -> [UInt8] {
            [0x80, 0x60, 0, 1] + withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: ssrc.bigEndian, Array.init)
                + [UInt8](repeating: 9, count: 500)
        }
        backlog.followPausedVideo([7: 3_000])
        let arrival = MonotonicTime(nanoseconds: 5)
        // Kept: the boundary's picture, another stream, RTCP, STUN; dropped: two packets of one newer picture.
        for bytes in [packet(ssrc: 7, timestamp: 3_000), packet(ssrc: 7, timestamp: 6_000), packet(ssrc: 7, timestamp: 6_000),
                      packet(ssrc: 8, timestamp: 6_000), Self.rtcp, Self.stun] {
            push(bytes, arrival: arrival)
        }
        let taken = backlog.take(maxMedia: 100)
        #expect(taken.datagrams.count == 4 && taken.oldestMediaArrival == arrival)
        #expect(backlog.counters.videoPacketsShed == 2 && backlog.counters.videoFramesShed == 1)
        backlog.followPausedVideo([:])
        push(packet(ssrc: 7, timestamp: 9_000), arrival: arrival)
        #expect(backlog.take(maxMedia: 100).datagrams.count == 1, "resumed: read again")
    }

    @Test func aFullBacklogDropsMediaAndKeepsControl() {
        let limits = ReceiveBacklog.Limits(mediaBytes: 10 * (1_000 + ReceiveBacklog.overheadBytes), controlBytes: 4_096)
        let backlog = ReceiveBacklog(limits: limits)
        for _ in 0..<25 { _ = backlog.push(Self.datagram(Self.rtp)) }
        for _ in 0..<20 { _ = backlog.push(Self.datagram(Self.stun)) }
        var counters = backlog.counters
        #expect(counters.mediaDropped == 15 && counters.controlDropped == 0)
        for _ in 0..<100 { _ = backlog.push(Self.datagram(Self.rtcp)) }
        counters = backlog.counters
        #expect(counters.controlDropped > 0, "control has a bound of its own")
        let all = backlog.take(maxMedia: 1_000)
        #expect(all.datagrams.filter { DatagramClass(firstBytes: $0.bytes) == .media }.count == 10)
        #expect(backlog.counters.waitingBytes == 0 && backlog.counters.peakBytes >= limits.mediaBytes)
    }

    @Test func oneLineWhenDropsStartAndOneWhenTheyStop() {
        var log = OverloadLog()
        var counters = ReceiveBacklog.Counters()
        #expect(log.observe(counters, now: .milliseconds(0)) == nil)
        counters.mediaDropped = 5
        guard case .started = log.observe(counters, now: .milliseconds(100)) else { Issue.record("no start"); return }
        counters.mediaDropped = 50
        #expect(log.observe(counters, now: .milliseconds(2_000)) == nil, "the same episode")
        #expect(log.observe(counters, now: .milliseconds(6_000)) == nil, "not quiet for 5 s yet")
        guard case .ended(let media, let control, let milliseconds) = log.observe(counters, now: .milliseconds(7_001)) else {
            Issue.record("no end"); return
        }
        #expect(media == 50 && control == 0 && milliseconds == 1_900)
        #expect(log.observe(counters, now: .milliseconds(8_000)) == nil)
    }
}

extension OverloadLog.Report: Equatable {
    public static func == (lhs: OverloadLog.Report, rhs: OverloadLog.Report) -> Bool { "\(lhs)" == "\(rhs)" }
}

@Suite struct KernelReceiveDropsTests {
    static let table = """
          sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
         6613: 0100007F:C0C3 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1224332 2 00000000b22f35f4 17
        12634: 0100007F:D848 0100007F:D856 01 00000000:00000000 00:00000000 00000000     0        0 1207246 2 000000000e95ee94 5
        12635: garbage
        """

    @Test func onlyOurPortsAreCounted() {
        #expect(KernelReceiveDrops.parse(Self.table, ports: [0xC0C3]) == 17)
        #expect(KernelReceiveDrops.parse(Self.table, ports: [0xC0C3, 0xD848]) == 22)
        #expect(KernelReceiveDrops.parse(Self.table, ports: [1]) == 0)
        #expect(KernelReceiveDrops.parse("", ports: [0xC0C3]) == 0)
    }

    /// A socket nobody reads, with a small buffer, flooded: the kernel's count is found by port.
    @Test func aFloodedSocketsDropsAreRead() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let unread = try await DatagramBootstrap(group: group)
            .channelOption(ChannelOptions.autoRead, value: false)
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 4_096)
            .bind(host: "127.0.0.1", port: 0).get()
        let sender = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(unread.localAddress?.port)
        #expect(KernelReceiveDrops.read(ports: [UInt16(port)]) == 0)
        for _ in 0..<200 {
            var buffer = sender.allocator.buffer(capacity: 1_000)
            buffer.writeBytes([UInt8](repeating: 7, count: 1_000))
            try await sender.writeAndFlush(AddressedEnvelope(remoteAddress: try #require(unread.localAddress), data: buffer))
        }
        let drops = KernelReceiveDrops.read(ports: [UInt16(port)]) ?? 0
        try await sender.close()
        try await unread.close()
        try await group.shutdownGracefully()
        #expect(drops > 150, "\(drops)")
    }
}
