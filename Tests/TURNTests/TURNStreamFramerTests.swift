import STUN
import Testing
@testable import TURN

@Suite struct TURNStreamFramerTests {
    let stun = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: STUNTransactionID(bytes: Array(repeating: 1, count: 12))!,
                           attributes: [.software("x")]).encoded(fingerprint: true)

    @Test func splitsBackToBackFramesWhateverTheChunking() throws {
        let channel = ChannelData.encode(channel: 0x4001, payload: [1, 2, 3, 4, 5], padded: true)
        let stream = stun + channel + ChannelData.encode(channel: 0x4FFF, payload: [], padded: true) + stun
        for chunk in [1, 3, 7, stream.count] {
            var framer = TURNStreamFramer()
            var frames: [[UInt8]] = []
            for start in stride(from: 0, to: stream.count, by: chunk) {
                frames += try framer.append(stream[start..<min(start + chunk, stream.count)])
            }
            #expect(frames == [stun, channel, [0x4F, 0xFF, 0, 0], stun])
            #expect(framer.pendingBytes == 0)
        }
        // The length excludes the padding; the payload does not include it.
        let parsed = try ChannelData.parse(channel)
        #expect(parsed.channel == 0x4001 && Array(parsed.payload) == [1, 2, 3, 4, 5])
    }

    @Test func anythingElseEndsTheStream() {
        var framer = TURNStreamFramer()
        #expect(throws: TURNWireError.unknownFrame(firstByte: 0x80)) { try framer.append([0x80, 0, 0, 0]) }
    }

    @Test func ChannelDataChecksItsLengthAndNumber() {
        #expect(throws: TURNWireError.lengthMismatch(declared: 8, available: 2)) { try ChannelData.parse([0x40, 0, 0, 8, 1, 2]) }
        #expect(throws: TURNWireError.badChannelNumber(0x5000)) { try ChannelData.parse([0x50, 0, 0, 0]) }
        #expect(throws: TURNWireError.lengthMismatch(declared: 0, available: 4)) { try ChannelData.parse([0x40, 0, 0, 0, 1, 2, 3, 4]) }
        #expect(throws: TURNWireError.truncated(3)) { try ChannelData.parse([0x40, 0, 0]) }
    }

    @Test func bufferIsBoundedByOneFrame() throws {
        var framer = TURNStreamFramer()
        // A declared 65,535-byte ChannelData: held until whole, never more than one frame.
        _ = try framer.append([0x40, 0x00, 0xFF, 0xFF] + Array(repeating: 0, count: 60_000))
        #expect(framer.pendingBytes == 60_004)
        let frames = try framer.append(Array(repeating: 0, count: 5_536))
        #expect(frames.count == 1 && frames[0].count == 65_540)
    }
}
