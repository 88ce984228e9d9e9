import ArgumentParser
import DTLS
import Foundation
import LoadGen
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import PeerConnection
import STUN
import Transport

/// `recbot-loadgen`: a Sora-compatible signaling and media server whose channel holds N
/// synthetic VP8+Opus publishers, for benchmarks and fault runs. It serves one recorder, then
/// writes the ground truth and exits.
@main
struct LoadGenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recbot-loadgen",
        abstract: "Serve a Sora channel of synthetic VP8+Opus publishers to one recorder.",
        discussion: """
            Prints {"type":"listening","url":"ws://…/signaling"} once ready. Point a recorder at that URL \
            (recbot join --url URL --channel C). The session ends after --duration, or when the recorder leaves; \
            the ground truth (frames sent per publisher) goes to --truth.
            """)

    @Option(help: "Synthetic publishers in the channel.") var publishers = 8
    @Option(help: "Seconds from the recorder's answer to the end (default: until the recorder leaves).") var duration: Double?
    @Option(help: "Publishers join spread over this many seconds.") var ramp = 1.0
    @Option(help: "Every N seconds one publisher leaves (re-offer, notify) and another joins.") var churnInterval: Double?
    @Option(help: "Every N seconds one publisher goes silent with no BYE, re-offer or notify.") var vanishInterval: Double?
    @Option(help: "Percent of first transmissions dropped (seeded; RTX is not dropped).") var loss = 0.0
    @Option(help: "Percent of first transmissions held back behind the next packet (seeded).") var reorder = 0.0
    @Option(help: "Percent of first transmissions sent twice (seeded).") var duplicate = 0.0
    @Option(help: "Bursty loss on each publisher's path, RTX too: PERCENT:BURST (Gilbert–Elliott, e.g. 15:4).")
    var burstLoss: String?
    @Option(help: "Each packet waits a random 0..N ms before it leaves (seeded; packets reorder).") var jitterMs = 0.0
    @Option(help: "Every N seconds the next publisher in turn sends at 10x its rate for --burst-seconds.") var burstInterval: Double?
    @Flag(help: "Publishers offer video but send only audio (what audio costs while video is paused).") var audioOnly = false
    @Option(help: "Length of a burst.") var burstSeconds = 0.5
    @Option(help: "Floor benchmark: no signaling, media to this HOST:PORT with fixed keys (recbot-floor receives it).")
    var floor: String?
    @Option(help: "Seed for ids, SSRCs and loss.") var seed: UInt64 = 1
    @Option(help: "Address for the WebSocket and the media socket.") var address = "127.0.0.1"
    @Option(help: "WebSocket port (0: any free port).") var port = 0
    @Option(help: "A VP8+Opus WebM to replay (default: made once with ffmpeg in --clip-cache).") var clip: String?
    @Option(help: "Where generated clips are kept.") var clipCache = ".build/loadgen-clips"
    @Option(help: "Generated clip: width.") var width = 640
    @Option(help: "Generated clip: height.") var height = 360
    @Option(help: "Generated clip: frames per second.") var fps = 30
    @Option(help: "Generated clip: video bitrate in kbit/s.") var videoKbps = 600
    @Option(help: "Pacing quantum in milliseconds.") var tickMs = 2
    @Option(help: "Write the ground truth (JSON) here at the end.") var truth: String?

    func run() async throws {
        var parameters = ClipMaker.Parameters()
        parameters.width = width
        parameters.height = height
        parameters.framesPerSecond = fps
        parameters.videoKilobits = videoKbps
        let clipPath = try clip ?? ClipMaker.clip(parameters, in: clipCache)
        let media = try MediaClip(path: clipPath)
        var plan = LoadPlan()
        plan.publishers = publishers
        plan.durationSeconds = duration
        plan.rampSeconds = ramp
        plan.churnIntervalSeconds = churnInterval
        plan.vanishIntervalSeconds = vanishInterval
        plan.lossPercent = loss
        plan.reorderPercent = reorder
        plan.duplicatePercent = duplicate
        if let burstLoss {
            let parts = burstLoss.split(separator: ":")
            guard let percent = parts.first.flatMap({ Double($0) }), percent >= 0, percent < 100,
                  let length = parts.count > 1 ? Double(parts[1]) : 4, length >= 1 else {
                throw ValidationError("--burst-loss \(burstLoss): expected PERCENT:BURST, e.g. 15:4")
            }
            (plan.burstLossPercent, plan.burstLength) = (percent, length)
        }
        plan.jitterMilliseconds = max(0, jitterMs)
        plan.audioOnly = audioOnly
        plan.burstIntervalSeconds = burstInterval
        plan.burstSeconds = burstSeconds
        plan.seed = seed

        // One thread: the generator's claim is that one core drives the whole channel.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let datagrams = DatagramHandler()
        let udp = try await DatagramBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.so_sndbuf), value: 8 << 20)
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: 4 << 20)
            // recvmmsg, 32 at a time, and up to 64 reads a turn: with NIO's default (one datagram
            // a read, 4 a turn) a generator busy sending can leave recbot's consent checks and
            // RTCP waiting in its socket (the likely loss of consent at 1024 publishers).
            .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: 32)
            .channelOption(ChannelOptions.maxMessagesPerRead, value: 64)
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 2_048 * 32))
            .channelInitializer { $0.pipeline.addHandler(datagrams) }
            .bind(host: address, port: 0).get()
        guard let mediaPort = udp.localAddress?.port else { throw ValidationError("the media socket has no port") }
        let generator = try LoadGenerator<SocketAddress>(plan: plan, clip: media, certificate: try DTLSCertificate(commonName: "recbot-loadgen"),
                                                         candidateAddress: address, candidatePort: UInt16(mediaPort),
                                                         transportAddress: { TransportAddress(socketAddress: $0) })
        let server = LoadServer(generator: generator, udp: udp, tickMilliseconds: max(1, tickMs))
        datagrams.server = server
        var listener: Channel?
        if let floor {
            let target = try Self.socketAddress(floor)
            try await udp.eventLoop.submit { try server.startFloor(remote: target) }.get()
            FileHandle.standardOutput.write(Data(#"{"type":"floor","target":"\#(floor)","publishers":\#(publishers)}"#.utf8 + [0x0A]))
        } else {
            let channel = try await webSocketServer(group: group, server: server)
            guard let listenPort = channel.localAddress?.port else { throw ValidationError("the WebSocket has no port") }
            listener = channel
            FileHandle.standardOutput.write(Data(#"{"type":"listening","url":"ws://\#(address):\#(listenPort)/signaling","publishers":\#(publishers)}"#.utf8 + [0x0A]))
        }
        try await server.done.get()
        let (ground, sentDatagrams, socketErrors, closedAfter) = try await udp.eventLoop.submit(confined: generator) { generator in
            (GroundTruth(generator), server.datagramsSent, server.socketErrors, server.socketClosedAfter)
        }.get()
        if let truth { try ground.write(to: truth) }
        let sent = ground.publishers.reduce(0) { $0 + $1.sent.videoFrames }
        FileHandle.standardError.write(Data("""
            recbot-loadgen: \(ground.end); \(ground.publishers.count) publishers, \(sent) video frames sent, \
            send lag p50 \(ground.sendLag.p50Milliseconds) ms p99 \(ground.sendLag.p99Milliseconds) ms max \(ground.sendLag.maxMilliseconds) ms, \
            NACKed \(ground.feedback.nackedPackets), PLI \(ground.feedback.pictureLossIndications), \(sentDatagrams) datagrams sent, \
            \(socketErrors) socket errors\(closedAfter.map { "; the media socket closed early, after \($0) datagrams" } ?? "")\n
            """.utf8))
        try? await listener?.close()
        try? await udp.close()
        try await group.shutdownGracefully()
    }

    static func socketAddress(_ hostAndPort: String) throws -> SocketAddress {
        guard let colon = hostAndPort.lastIndex(of: ":"), let port = Int(hostAndPort[hostAndPort.index(after: colon)...]) else {
            throw ValidationError("--floor wants HOST:PORT, not \(hostAndPort)")
        }
        return try SocketAddress(ipAddress: String(hostAndPort[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port)
    }

    private func webSocketServer(group: EventLoopGroup, server: LoadServer) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: 1 << 24,
                    shouldUpgrade: { channel, head in
                        channel.eventLoop.makeSucceededFuture(head.uri.hasPrefix("/signaling") ? HTTPHeaders() : nil)
                    },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1_024, maxAccumulatedFrameSize: 1 << 24))
                            try channel.pipeline.syncOperations.addHandler(SignalingHandler(server: server))
                        }
                    })
                return channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: address, port: port).get()
    }
}
