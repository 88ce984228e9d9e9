import ArgumentParser
import Foundation
import LoadGen
import NIOCore
import NIOPosix
import SRTP

/// `recbot-floor`: the floor of recbot's packet path, for `bench/bench.sh`. It receives what
/// `recbot-loadgen --floor` sends, with the same batched reads as recbot (recvmmsg, 32 per
/// call), decrypts each packet in place with recbot's own SRTP code (`SRTPSession`, AES-GCM as
/// recbot and the generator negotiate), appends it to one file, and does nothing else: no
/// parsing, no jitter buffer, no depacketizing, no muxing, no feedback. Its CPU per packet is
/// what any recorder pays before it does its own work.
@main
struct FloorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recbot-floor",
        abstract: "Receive, SRTP-decrypt and append to a file: the packet floor recbot is measured against.",
        discussion: """
            Prints {"type":"listening","port":N}; point recbot-loadgen --floor HOST:N at it. Exits once media \
            has stopped for --idle-seconds and prints its counts as JSON.
            """)

    @Option(help: "Address to receive on.") var address = "127.0.0.1"
    @Option(help: "Port (0: any free port).") var port = 0
    @Option(help: "The file the decrypted packets are appended to.") var out: String
    @Option(help: "Exit after media has stopped for this long.") var idleSeconds = 1.0

    func run() async throws {
        let sink = try FloorSink(path: out)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)  // recbot's media path is one loop too
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 16 << 20)  // as recbot asks
            .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: 32)
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 9_000 * 32))
            .channelInitializer { $0.pipeline.addHandler(FloorHandler(sink: sink)) }
            .bind(host: address, port: port).get()
        guard let boundPort = channel.localAddress?.port else { throw ValidationError("the socket has no port") }
        FileHandle.standardOutput.write(Data(#"{"type":"listening","port":\#(boundPort)}"#.utf8 + [0x0A]))
        let idle = Int64(idleSeconds * 1e9)
        while true {
            try await Task.sleep(nanoseconds: UInt64(idle / 4))
            let quietFor = try await channel.eventLoop.submit { sink.nanosecondsSinceLastPacket() }.get()
            if let quietFor, quietFor >= idle { break }
        }
        let counts = try await channel.eventLoop.submit { try sink.finish() }.get()
        try await channel.close()
        try await group.shutdownGracefully()
        FileHandle.standardOutput.write(Data(#"{"type":"done","packets":\#(counts.packets),"bytes":\#(counts.bytes),"failures":\#(counts.failures)}"#.utf8 + [0x0A]))
    }
}

/// Decrypts into one reusable buffer and appends to a file through a 1 MiB buffer. Touched only
/// on the event loop.
final class FloorSink: @unchecked Sendable {
    struct Counts { var packets = 0, bytes = 0, failures = 0 }

    private let srtp: SRTPSession
    private let descriptor: Int32
    private var scratch = [UInt8](repeating: 0, count: 65_536)
    private var pending: [UInt8] = []
    private var counts = Counts()
    private var lastPacket: UInt64?

    init(path: String) throws {
        srtp = try SRTPSession(keys: FloorKeys.material)
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else { throw ValidationError("cannot create \(path): errno \(errno)") }
        pending.reserveCapacity(2 << 20)
    }

    func receive(_ datagram: ByteBuffer) {
        let count = datagram.readableBytes
        guard count >= 2, count <= scratch.count else { return }
        let isRTCP = datagram.getInteger(at: datagram.readerIndex + 1, as: UInt8.self).map { (192...223).contains($0) } ?? false
        let plain: Int? = scratch.withUnsafeMutableBytes { buffer in
            datagram.withUnsafeReadableBytes { buffer.copyMemory(from: $0) }
            return isRTCP ? try? srtp.unprotectRTCP(in: buffer, count: count) : try? srtp.unprotectRTP(in: buffer, count: count)
        }
        guard let plain else {
            counts.failures += 1
            return
        }
        counts.packets += 1
        counts.bytes += plain
        pending.append(contentsOf: scratch[..<plain])
        if pending.count >= 1 << 20 { flush() }
    }

    /// Called once per batch of reads: the floor reads the clock no more often than recbot does.
    func readBatchComplete() {
        lastPacket = DispatchTime.now().uptimeNanoseconds
    }

    func nanosecondsSinceLastPacket() -> Int64? {
        lastPacket.map { Int64(DispatchTime.now().uptimeNanoseconds - $0) }
    }

    private func flush() {
        pending.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        pending.removeAll(keepingCapacity: true)
    }

    func finish() throws -> Counts {
        flush()
        close(descriptor)
        return counts
    }
}

final class FloorHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let sink: FloorSink

    init(sink: FloorSink) { self.sink = sink }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sink.receive(unwrapInboundIn(data).data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        sink.readBatchComplete()
    }
}
