import RTP
import Testing
import WireCoding
@testable import Media

/// An overloaded core reaches packets seconds after the socket read them. Frames are placed by
/// when they were read: a backlog is not the sender's clock jumping.
@Suite struct ReadTimeTests {
    /// 12 s of Opus read every 20 ms, reached by the core in one burst at the end.
    private func burst(passReadTime: Bool) throws -> (frames: [ReceivedFrame], receiver: MediaReceiver) {
        let receiver = Fixtures.receiver([Fixtures.audioTrack()])
        let firstRead: Int64 = 1_000_000_000
        let reached = MonotonicTime(nanoseconds: firstRead + 12_000_000_000)
        var frames: [ReceivedFrame] = []
        for index in 0..<600 {
            let builder = RTPPacketBuilder(payloadType: 111, sequenceNumber: UInt16(index), timestamp: UInt32(index) * 960, ssrc: 3)
            let packet = try RTPPacket(parsing: builder.build(payload: [0xFC, 0x01, 0x02]))
            let readAt = MonotonicTime(nanoseconds: firstRead + Int64(index) * 20_000_000)
            frames += receiver.handle(rtp: packet, readAt: passReadTime ? readAt : nil, now: reached).frames
        }
        return (frames, receiver)
    }

    @Test func aBacklogIsPlacedWhereItWasRead() throws {
        let (frames, receiver) = try burst(passReadTime: true)
        #expect(frames.count == 600)
        let times = frames.map(\.mediaTime.nanoseconds)
        #expect(times.first == 1_000_000_000, "the first frame sits at its read time, not 12 s later")
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 20_000_000 }, "every step is the RTP clock's")
        #expect(receiver.counters.sync.timestampDiscontinuities == 0)
        #expect(frames.allSatisfy { $0.completedAt.nanoseconds == 13_000_000_000 }, "the recorder's waits still count from now")
    }

    /// The same burst judged by the core's time: this is what the read time prevents.
    @Test func withoutTheReadTimeTheBurstLooksLikeAJump() throws {
        let (_, receiver) = try burst(passReadTime: false)
        #expect(receiver.counters.sync.timestampDiscontinuities > 0)
    }
}
