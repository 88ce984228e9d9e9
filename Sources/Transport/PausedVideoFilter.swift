/// A classic BPF program (the kernel's socket filter) that drops the paused video streams'
/// new pictures before they are queued on the socket, so recbot never reads them.
///
/// Past capacity most of what arrives is paused video, and reading it was the sockets' thread's
/// largest cost: under a quarter of the CPU 256 publishers need, that thread took half of the
/// quota copying datagrams it then dropped, and the kernel dropped audio unread meanwhile. The
/// RTP header is in the clear (SRTP encrypts the payload only), so the kernel can tell them
/// apart: the same rule as `PausedVideo.sheds(ssrc:timestamp:)`, which stays in user space for
/// what the filter does not cover (a relay's TURN framing, streams past `maximumStreams`).
///
/// Written by hand: it is a few dozen instructions, and no Swift package emits classic BPF.
public enum PausedVideoFilter {
    /// One instruction, as `struct sock_filter` lays it out.
    public struct Instruction: Equatable, Sendable {
        public var code: UInt16
        public var jt: UInt8
        public var jf: UInt8
        public var k: UInt32
    }

    /// Streams one program covers at most: four instructions each, under the kernel's 4,096.
    /// The kernel may take fewer (its socket option memory, `net.core.optmem_max`, holds the
    /// program as translated): `DatagramSocket.filterPausedVideo` halves the count until it does.
    public static let maximumStreams = 1_000

    /// The program for `boundaries` (SSRC: the RTP timestamp of the last picture kept), or an
    /// empty one when nothing is paused (the caller detaches the filter then). The program sees
    /// the UDP header at offset 0 and returns 0 (drop) or the whole datagram.
    public static func program(boundaries: [UInt32: UInt32], maximumStreams: Int = maximumStreams) -> [Instruction] {
        guard !boundaries.isEmpty, maximumStreams > 0 else { return [] }
        let streams = boundaries.sorted { $0.key < $1.key }.prefix(maximumStreams)
        var program = prologue
        let tail = program.count + streams.count * 4 + 1
        for (ssrc, boundary) in streams {
            program.append(.init(code: Code.jeqK, jt: 0, jf: 3, k: ssrc))
            program.append(.init(code: Code.loadWord, jt: 0, jf: 0, k: timestampOffset))
            program.append(.init(code: Code.subK, jt: 0, jf: 0, k: boundary))
            program.append(.init(code: Code.jump, jt: 0, jf: 0, k: UInt32(tail - (program.count + 1))))
        }
        program.append(accept)  // no paused stream's packet
        // A holds timestamp - boundary: the boundary's own picture (0) and older ones (negative
        // in serial-number order, RFC 1982) pass; newer pictures are dropped.
        program.append(.init(code: Code.jeqK, jt: 1, jf: 0, k: 0))
        program.append(.init(code: Code.jsetK, jt: 0, jf: 1, k: 0x8000_0000))
        program.append(accept)
        program.append(.init(code: Code.returnK, jt: 0, jf: 0, k: 0))
        return program
    }

    /// Offsets from the UDP header: the RTP header starts at 8.
    private static let firstByteOffset: UInt32 = 8
    private static let timestampOffset: UInt32 = 8 + 4
    private static let ssrcOffset: UInt32 = 8 + 8

    private static let accept = Instruction(code: Code.returnK, jt: 0, jf: 0, k: UInt32.max)

    /// Anything but an RTP packet long enough to have a header passes: STUN, DTLS, RTCP
    /// (packet types 192-223 share RTP's first byte, RFC 5761), TURN ChannelData.
    private static let prologue: [Instruction] = [
        .init(code: Code.loadLength, jt: 0, jf: 0, k: 0),
        .init(code: Code.jgeK, jt: 1, jf: 0, k: 8 + 12),
        accept,
        .init(code: Code.loadByte, jt: 0, jf: 0, k: firstByteOffset),
        .init(code: Code.andK, jt: 0, jf: 0, k: 0xC0),
        .init(code: Code.jeqK, jt: 1, jf: 0, k: 0x80),
        accept,
        .init(code: Code.loadByte, jt: 0, jf: 0, k: firstByteOffset + 1),
        .init(code: Code.jgeK, jt: 0, jf: 2, k: 192),
        .init(code: Code.jgtK, jt: 1, jf: 0, k: 223),
        accept,
        .init(code: Code.loadWord, jt: 0, jf: 0, k: ssrcOffset),
    ]

    /// The opcodes used (linux/filter.h: class | size | mode, or class | op | source).
    enum Code {
        static let loadWord: UInt16 = 0x00 | 0x00 | 0x20  // BPF_LD | BPF_W | BPF_ABS
        static let loadByte: UInt16 = 0x00 | 0x10 | 0x20  // BPF_LD | BPF_B | BPF_ABS
        static let loadLength: UInt16 = 0x00 | 0x00 | 0x80  // BPF_LD | BPF_W | BPF_LEN
        static let andK: UInt16 = 0x04 | 0x50  // BPF_ALU | BPF_AND | BPF_K
        static let subK: UInt16 = 0x04 | 0x10  // BPF_ALU | BPF_SUB | BPF_K
        static let jump: UInt16 = 0x05 | 0x00  // BPF_JMP | BPF_JA
        static let jeqK: UInt16 = 0x05 | 0x10  // BPF_JMP | BPF_JEQ | BPF_K
        static let jgtK: UInt16 = 0x05 | 0x20  // BPF_JMP | BPF_JGT | BPF_K
        static let jgeK: UInt16 = 0x05 | 0x30  // BPF_JMP | BPF_JGE | BPF_K
        static let jsetK: UInt16 = 0x05 | 0x40  // BPF_JMP | BPF_JSET | BPF_K
        static let returnK: UInt16 = 0x06  // BPF_RET | BPF_K
    }
}
