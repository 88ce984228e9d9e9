import CodecBindings
import DTLS
import Foundation
import Keying
import Media
import PeerConnection
import RTP
import SDP
import Testing
import TestSupport
import WireCoding

/// Streams of real libwebrtc senders (Chromium 156, forwarded by Janus's VideoRoom), as recbot
/// received them after SRTP (`recbot join --capture-rtp`), replayed through the media core on
/// a simulated clock: the packets' own arrival times drive it, timers included. What real
/// senders do that ours never did (capture-clock timestamps, padding-only probes, RTX, DTX,
/// sparse SRs) is then a test in CI, with no browser. Tests/Corpus/README.md says how the
/// captures were made.
@Suite struct CorpusReplayTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Corpus/libwebrtc-janus").path
    static var captures: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".pcap") }.sorted()
    }

    @Test(arguments: CorpusReplayTests.captures)
    func everyFrameDecodesAndEveryStreamKeepsItsSendersClock(capture: String) throws {
        let session = try CapturedSession(path: Self.directory + "/" + capture)
        let replay = try Replay(session)
        #expect(!replay.frames.isEmpty)
        let sync = replay.receiver.counters.sync
        // Reports as sparse as libwebrtc's place every stream from its start: no arrival start, no
        // slew, no discontinuity (docs/timeline.md).
        #expect(sync.arrivalStarts == 0 && sync.slewCorrections == 0 && sync.timestampDiscontinuities == 0, "\(capture): \(sync)")
        for (ssrc, frames) in Dictionary(grouping: replay.frames, by: \.ssrc) {
            let kind = frames[0].kind
            let rate: Int64 = kind == .video ? 90_000 : 48_000
            // On the sender's RTP clock: media time − RTP time is one constant, to the tick.
            let rtp0 = Int64(frames[0].frame.rtpTimestamp)
            var unwrapped = rtp0, previous = frames[0].frame.rtpTimestamp
            var offsets: [Int64] = []
            for frame in frames {
                unwrapped += Int64(Int32(bitPattern: frame.frame.rtpTimestamp &- previous))
                previous = frame.frame.rtpTimestamp
                offsets.append(frame.mediaTime.nanoseconds - (unwrapped - rtp0) * 1_000_000_000 / rate)
            }
            #expect(offsets.max()! - offsets.min()! <= 1_000_000_000 / rate + 1, "\(capture) SSRC \(ssrc): placement moved by \(offsets.max()! - offsets.min()!) ns")
            try expectDecodable(frames, codec: frames[0].codec, capture: capture)
        }
    }

    func expectDecodable(_ frames: [ReceivedFrame], codec: String, capture: String) throws {
        var errors = 0
        switch codec {
        case "OPUS":
            let decoder = try OpusDecoder(channels: 2)
            for frame in frames where (try? decoder.decode(frame.frame.data)) == nil { errors += 1 }
        case "VP8", "VP9":
            let decoder = try VPXDecoder(codec: codec == "VP8" ? .vp8 : .vp9)
            for frame in frames where (try? decoder.decode(frame.frame.data)) == nil { errors += 1 }
        case "AV1":
            let decoder = try AV1Decoder()
            for frame in frames where (try? decoder.decode(frame.frame.data)) == nil { errors += 1 }
        case "H264":
            let decoder = try H264Decoder()
            for frame in frames where (try? decoder.decode(frame.frame.data)) == nil { errors += 1 }
        default:
            Issue.record("\(capture): no decoder for \(codec)")
        }
        #expect(errors == 0, "\(capture) \(codec): \(errors) of \(frames.count) frames did not decode")
    }
}

/// The capture fed through a `MediaReceiver` configured as `recbot join` configures it.
struct Replay {
    let receiver: MediaReceiver
    private(set) var frames: [ReceivedFrame] = []

    init(_ session: CapturedSession) throws {
        var random = SplitMix64(seed: 11)
        var configuration = MediaReceiverConfiguration(localSSRC: 0x5EC0_4D00, cname: "replay")
        configuration.senderReportHoldNanoseconds = 2_000_000_000
        receiver = MediaReceiver(configuration: configuration, random: { random.next() })
        let base: Int64 = 1_000_000_000
        var offers = session.offers[...]
        var now = MonotonicTime(nanoseconds: base)
        for packet in session.packets {
            let time = MonotonicTime(nanoseconds: base + packet.at)
            while let offer = offers.first, offer.at <= packet.at {
                offers = offers.dropFirst()
                frames += receiver.update(tracks: try Self.tracks(answering: offer.sdp)).frames
            }
            while let due = receiver.nextTimeout, due <= time {
                now = max(now, due)
                frames += receiver.handleTimeout(now: now).frames
            }
            now = max(now, time)
            if RTPPacket.isRTCP(packet.bytes) {
                if let rtcp = try? RTCPPacket.parseCompound(packet.bytes) { frames += receiver.handle(rtcp: rtcp, now: now).frames }
            } else if let rtp = try? RTPPacket(parsing: packet.bytes) {
                frames += receiver.handle(rtp: rtp, now: now).frames
            }
        }
        frames += receiver.releaseHeldFrames(now: now).frames
    }

    /// The tracks recbot receives on when it answers `sdp` (the capabilities `recbot join` uses).
    static func tracks(answering sdp: String) throws -> [ReceiveTrack] {
        var capabilities = ReceiverCapabilities()
        capabilities.rtcpFeedback = ["nack", "nack pli", "ccm fir"]
        capabilities.acceptsDataChannels = true
        let local = LocalTransportParameters(iceUfrag: "replay", icePwd: "replayreplayreplayreplay",
                                             fingerprint: DTLSFingerprint(algorithm: "sha-256", bytes: Array(repeating: 0xAB, count: 32))!,
                                             sessionID: "1")
        let answer = try RecvOnlyAnswerBuilder.answer(to: SessionDescription(parsing: sdp), local: local, capabilities: capabilities)
        return ReceiveTrack.tracks(from: answer.media)
    }
}
