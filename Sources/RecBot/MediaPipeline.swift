import Foundation
import Logging
import Media
import Recorder
import RTP
import SDP
import Transport
import WireCoding

/// Counters for the live status and the logs.
public struct PipelineCounters: Sendable, Equatable {
    public var rtpPackets = 0
    public var unroutedPackets = 0
    public var unsupportedCodecPackets = 0
    public var unsafeSenders = 0
    public var pliSent = 0
}

/// The packet path: decrypted RTP → track → frame assembler → the sender's recorder.
/// Runs on the transport's event loop; file and catalog work happen elsewhere.
/// @unchecked Sendable: confined to the transport's event loop; other threads only reach it through
/// `eventLoop.submit`.
final class MediaPipeline: @unchecked Sendable {
    private struct Stream {
        var assembler: FrameAssembler
        var isVideo: Bool
        var sender: String
        var codec: NegotiatedCodec
        var clock: SequenceUnwrapper
        var firstRTP: Int64?
        var firstArrival: MonotonicTime?
        var lastPLI: MonotonicTime?
    }

    private var router = TrackRouter()
    private var streams: [UInt32: Stream] = [:]
    private(set) var recorders: [String: SenderRecorder] = [:]
    private(set) var counters = PipelineCounters()
    private let layout: ArchiveLayout
    private let recordingStartMilliseconds: Int64
    private let recordingStartTime: MonotonicTime
    private let localSSRC: UInt32
    private let logger: Logger
    private let onRecordingStarted: (SenderRecorder) -> Void
    private var unsafeSenderNames: Set<String> = []
    static let maximumStreams = 512

    /// Sends RTCP (PLI) through the transport.
    var sendRTCP: ([RTCPPacket]) -> Void = { _ in }

    init(layout: ArchiveLayout, recordingStartMilliseconds: Int64, recordingStartTime: MonotonicTime, localSSRC: UInt32,
         logger: Logger, onRecordingStarted: @escaping (SenderRecorder) -> Void) {
        self.layout = layout
        self.recordingStartMilliseconds = recordingStartMilliseconds
        self.recordingStartTime = recordingStartTime
        self.localSSRC = localSSRC
        self.logger = logger
        self.onRecordingStarted = onRecordingStarted
    }

    /// Applies a (re-)negotiation. Returns the recorders of senders that are no longer receiving
    /// (Sora released their sections), for the caller to finish off the event loop.
    func update(media: [NegotiatedMedia]) -> [SenderRecorder] {
        router.update(media)
        let present = Set(media.filter(\.receiving).compactMap(\.msidStream))
        let gone = recorders.filter { !present.contains($0.key) }
        for (sender, _) in gone {
            recorders[sender] = nil
            finishedCounters[sender] = assemblerCounters(sender: sender)
            streams = streams.filter { $0.value.sender != sender }
        }
        return Array(gone.values)
    }

    /// Stream counters of senders that left, kept for their catalog rows.
    private(set) var finishedCounters: [String: AssemblerCounters] = [:]

    func handle(_ packet: RTPPacket, now: MonotonicTime) {
        counters.rtpPackets += 1
        guard let track = router.route(packet), let codec = track.codecs[packet.payloadType] else {
            counters.unroutedPackets += 1
            return
        }
        if streams[packet.ssrc] == nil {
            guard streams.count < MediaPipeline.maximumStreams, let depacketizer = TrackRouter.depacketizer(for: codec) else {
                counters.unsupportedCodecPackets += 1
                return
            }
            let sender = track.sender ?? "mid-\(track.mid)"
            guard ArchiveLayout.isSafeConnectionID(sender) else {
                counters.unsafeSenders += 1
                if unsafeSenderNames.insert(String(sender.prefix(80))).inserted {
                    logger.error("sender id is not safe as a file name; its media is not recorded", metadata: ["sender": "\(sender.prefix(80))"])
                }
                return
            }
            streams[packet.ssrc] = Stream(assembler: FrameAssembler(depacketizer: depacketizer, isVideo: track.isVideo), isVideo: track.isVideo,
                                          sender: sender, codec: codec, clock: SequenceUnwrapper(bits: 32))
            if track.isVideo { requestKeyframe(ssrc: packet.ssrc, now: now) }  // do not wait for the next one
        }
        guard var stream = streams[packet.ssrc] else { return }
        let output = stream.assembler.push(packet, arrival: now)
        deliver(output, stream: &stream, ssrc: packet.ssrc, now: now)
        streams[packet.ssrc] = stream
    }

    /// Every ~100 ms: overdue packets count as lost, recorders may start, keyframes are asked for again.
    func tick(now: MonotonicTime) {
        for ssrc in Array(streams.keys) {
            guard var stream = streams[ssrc] else { continue }
            deliver(stream.assembler.flush(now: now), stream: &stream, ssrc: ssrc, now: now)
            if stream.isVideo && stream.assembler.waitingForKeyframe,
               stream.lastPLI.map({ now.nanoseconds - $0.nanoseconds >= 1_000_000_000 }) ?? true {
                streams[ssrc] = stream
                requestKeyframe(ssrc: ssrc, now: now)
                continue
            }
            streams[ssrc] = stream
        }
        for recorder in recorders.values { recorder.tick(now: now) }
    }

    private func deliver(_ output: AssemblerOutput, stream: inout Stream, ssrc: UInt32, now: MonotonicTime) {
        if output.requestKeyframe {
            streams[ssrc] = stream
            requestKeyframe(ssrc: ssrc, now: now)
            stream.lastPLI = streams[ssrc]?.lastPLI
        }
        for frame in output.frames {
            let rtp = stream.clock.unwrap(frame.rtpTimestamp)
            if stream.firstRTP == nil { stream.firstRTP = rtp; stream.firstArrival = now }
            guard let firstRTP = stream.firstRTP, let firstArrival = stream.firstArrival else { continue }
            // Before RTCP sender reports: each stream anchored on its first arrival.
            let mediaTime = firstArrival.adding(nanoseconds: (rtp - firstRTP) * 1_000_000_000 / Int64(max(1, stream.codec.clockRate)))
            recorder(for: stream)?.add(frame, video: stream.isVideo, mediaTime: mediaTime, arrival: now)
        }
    }

    private func recorder(for stream: Stream) -> SenderRecorder? {
        if let existing = recorders[stream.sender] { return existing }
        // The sender's video codec is the one its video section negotiated (first, when several).
        let videoTrack = router.tracks.values.first { $0.sender == stream.sender && $0.isVideo }
        let videoCodecName = stream.isVideo ? stream.codec.name : videoTrack?.codecs.values.sorted { $0.payloadType < $1.payloadType }.first?.name
        let hasAudio = router.tracks.values.contains { $0.sender == stream.sender && !$0.isVideo }
        let tracks = SenderTracks(videoCodec: videoCodecName.flatMap(TrackRouter.webMCodec), audioChannels: hasAudio ? 2 : nil)
        var uid = [UInt8](repeating: 0, count: 16)
        for index in uid.indices { uid[index] = UInt8.random(in: 0...255) }
        do {
            let recorder = try SenderRecorder(connectionID: stream.sender, tracks: tracks, layout: layout,
                                              recordingStartMilliseconds: recordingStartMilliseconds,
                                              recordingStartTime: recordingStartTime, segmentUID: uid)
            recorders[stream.sender] = recorder
            onRecordingStarted(recorder)
            logger.info("recording sender", metadata: ["sender": "\(stream.sender)", "video": "\(tracks.videoCodec?.rawValue ?? "-")",
                                                       "audio": "\(hasAudio)"])
            return recorder
        } catch {
            counters.unsafeSenders += 1
            return nil
        }
    }

    private func requestKeyframe(ssrc: UInt32, now: MonotonicTime) {
        if let last = streams[ssrc]?.lastPLI, now.nanoseconds - last.nanoseconds < 300_000_000 { return }
        streams[ssrc]?.lastPLI = now
        counters.pliSent += 1
        sendRTCP([.pictureLossIndication(sender: localSSRC, media: ssrc)])
    }

    /// Per-sender stream counters, for sidecars and the catalog.
    func assemblerCounters(sender: String) -> AssemblerCounters {
        streams.values.filter { $0.sender == sender }.reduce(into: AssemblerCounters()) { total, stream in
            let c = stream.assembler.counters
            total.packets += c.packets
            total.lost += c.lost
            total.duplicates += c.duplicates
            total.framesEmitted += c.framesEmitted
            total.framesDropped += c.framesDropped
            total.malformedFrames += c.malformedFrames
            total.keyframeRequests += c.keyframeRequests
        }
    }
}
