import Bitstreams
import CodecBindings
import RTP
import Testing
import WireCoding
@testable import Media

/// A VP9 RTP packetizer written from RFC 9628 for the tests: every layer frame from a B packet
/// to an E packet, the marker on the picture's last packet.
func packetizeVP9(_ layers: [[UInt8]], pictureID: UInt16, interPredicted: Bool, flexible: Bool, sequence: inout UInt16, timestamp: UInt32,
                  maximumPayload: Int = 300, layerSizes: [(Int, Int)]? = nil) -> [RTPPacket] {
    var packets: [RTPPacket] = []
    for (spatial, frame) in layers.enumerated() {
        var offset = 0
        while offset < frame.count {
            let end = min(frame.count, offset + maximumPayload)
            var first: UInt8 = 0x80 | 0x20  // I, L
            if interPredicted { first |= 0x40 }
            if flexible { first |= 0x10 }
            if offset == 0 { first |= 0x08 }
            if end == frame.count { first |= 0x04 }
            let withSS = layerSizes != nil && offset == 0 && spatial == 0
            if withSS { first |= 0x02 }
            var descriptor: [UInt8] = [first, 0x80 | UInt8(pictureID >> 8 & 0x7F), UInt8(pictureID & 0xFF), UInt8(spatial) << 1]
            if !flexible { descriptor.append(UInt8(truncatingIfNeeded: pictureID)) }  // TL0PICIDX
            if flexible && interPredicted { descriptor.append(1 << 1) }               // P_DIFF 1, no more
            if withSS, let sizes = layerSizes {
                descriptor.append(UInt8(sizes.count - 1) << 5 | 0x10)
                for (width, height) in sizes { descriptor += [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)] }
            }
            var builder = RTPPacketBuilder(payloadType: 98, sequenceNumber: sequence, timestamp: timestamp, ssrc: 1)
            builder.marker = spatial == layers.count - 1 && end == frame.count
            packets.append(try! RTPPacket(parsing: builder.build(payload: descriptor + frame[offset..<end])))
            sequence &+= 1
            offset = end
        }
    }
    return packets
}

func vp9Frames(count: Int, width: Int = 160, height: Int = 96, keyframeInterval: Int = 10) throws -> [EncodedVideoFrame] {
    let encoder = try VPXEncoder(codec: .vp9, width: width, height: height, framesPerSecond: 30, keyframeInterval: keyframeInterval)
    var frames: [EncodedVideoFrame] = []
    for index in 0..<count { frames += try encoder.encode(.testPattern(width: width, height: height, frame: index), pts: Int64(index)) }
    return frames
}

let vp9Track = Fixtures.videoTrack(codec: "VP9", payloadType: 98, rtx: 99)

@Suite struct VP9DescriptorTests {
    @Test func everyHeaderBitIsRead() throws {
        // I with a 7-bit picture ID, non-flexible L with TL0PICIDX, B and E, Z.
        let short = try VP9PayloadDescriptor.parse([0xAD, 0x15, 0b0111_0011, 0x2A, 0xFF][...])
        #expect(short.pictureID == 0x15 && !short.interPredicted && !short.flexible && short.startOfFrame && short.endOfFrame)
        #expect(short.notUpperLayerReference && short.temporalID == 3 && short.switchingUpPoint && short.spatialID == 1 && short.interLayerDependency)
        #expect(short.tl0PictureIndex == 0x2A && short.length == 4)
        // 15-bit picture ID, flexible and inter-predicted with three P_DIFFs.
        let flexible = try VP9PayloadDescriptor.parse([0xF8, 0xBF, 0xFF, 0x40, 0x03, 0x05, 0x06, 0xEE][...])
        #expect(flexible.pictureID == 0x3FFF && flexible.interPredicted && flexible.flexible && flexible.tl0PictureIndex == nil)
        #expect(flexible.referenceDifferences == [1, 2, 3] && flexible.length == 7)
        // SS with two layer sizes and a two-entry picture group.
        let ss = try VP9PayloadDescriptor.parse([0x0A, 0x38, 0x01, 0x40, 0x00, 0xB4, 0x02, 0x80, 0x01, 0x68, 0x02, 0x04, 0x01, 0x38, 0x02, 0x03, 0x09][...])
        let structure = try #require(ss.scalability)
        #expect(structure.spatialLayers == 2 && structure.layerSizes.map(\.width) == [320, 640] && structure.layerSizes.map(\.height) == [180, 360])
        #expect(structure.pictureGroup == [.init(temporalID: 0, switchingUpPoint: false, referenceDifferences: [1]),
                                           .init(temporalID: 1, switchingUpPoint: true, referenceDifferences: [2, 3])])
        #expect(ss.length == 16)
    }

    @Test func truncatedDescriptorsAndFourPDiffsAreRejected() {
        let full: [UInt8] = [0xAE, 0x80 | 0x01, 0x02, 0x20, 0x07, 0xE0 | 0x10, 0, 1, 0, 1]  // ...and an SS claiming 8 layers
        for length in 0..<full.count {
            #expect(throws: DepacketizeError.self) { try VP9PayloadDescriptor.parse(full[0..<length]) }
        }
        #expect(throws: DepacketizeError.self) { try VP9PayloadDescriptor.parse([0x50, 0x03, 0x05, 0x07, 0x09, 0x00][...]) }
    }

    @Test func randomPayloadsNeverCrash() {
        var random = SeededRandom(seed: 9)
        for _ in 0..<30_000 {
            let payload = (0..<Int(random.next() % 48)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = try? VP9PayloadDescriptor.parse(payload[...])
            _ = try? VP9Depacketizer().assemble([payload[...], payload.dropFirst(3)], timestamp: 0)
            _ = VP9FrameHeader(payload)
            _ = VP9Superframe.unpack(payload)
        }
    }
}

@Suite struct VP9AssemblyTests {
    @Test(arguments: [false, true])
    func libvpxFramesRoundTripAndDecode(flexible: Bool) throws {
        let frames = try vp9Frames(count: 40)
        var sequence: UInt16 = 65_400
        var packets: [RTPPacket] = []
        for (index, frame) in frames.enumerated() {
            packets += packetizeVP9([frame.data], pictureID: UInt16(index), interPredicted: !frame.isKeyframe, flexible: flexible,
                                    sequence: &sequence, timestamp: UInt32(index * 3_000))
        }
        let (out, _) = assemble(packets, track: vp9Track)
        #expect(out.map(\.data) == frames.map(\.data))
        #expect(out.map(\.isKeyframe) == frames.map(\.isKeyframe) && out.filter(\.isKeyframe).count == 4)
        #expect(out.first?.width == 160 && out.first?.height == 96)
        let decoder = try VPXDecoder(codec: .vp9)
        for frame in out { #expect(try decoder.decode(frame.data).first.map { $0.width == 160 && $0.height == 96 } ?? true) }
    }

    /// Two spatial layers per picture become one superframe; libvpx decodes it, and the index
    /// gives the layer frames back as they were sent. The SS names the top layer's size.
    @Test func spatialLayersBecomeOneSuperframe() throws {
        let frames = try vp9Frames(count: 20)
        var sequence: UInt16 = 1
        var packets: [RTPPacket] = []
        for picture in 0..<10 {
            let layers = [frames[2 * picture].data, frames[2 * picture + 1].data]
            packets += packetizeVP9(layers, pictureID: UInt16(picture), interPredicted: picture != 0, flexible: false, sequence: &sequence,
                                    timestamp: UInt32(picture * 3_000), layerSizes: picture == 0 ? [(160, 96), (320, 192)] : nil)
        }
        let (out, _) = assemble(packets, track: vp9Track)
        #expect(out.count == 10)
        #expect(out.first?.isKeyframe == true && out.first?.width == 320 && out.first?.height == 192)
        let decoder = try VPXDecoder(codec: .vp9)
        for (picture, frame) in out.enumerated() {
            #expect(VP9Superframe.unpack(frame.data) == [frames[2 * picture].data, frames[2 * picture + 1].data])
            _ = try decoder.decode(frame.data)
        }
    }

    /// libvpx's own spatial SVC (three layers, each predicted from the one below): the
    /// layers go out as separate RTP layer frames, as an SFU forwards them, and come back as
    /// superframes that decode to the top layer's size.
    @Test func realSpatialSVCDecodesAtTheTopLayer() throws {
        let encoder = try VPXEncoder(codec: .vp9, width: 320, height: 192, framesPerSecond: 30, bitrateKbps: 600, keyframeInterval: 15, spatialLayers: 3)
        var sequence: UInt16 = 7
        var packets: [RTPPacket] = []
        var sent: [[[UInt8]]] = []
        for index in 0..<30 {
            for frame in try encoder.encode(.testPattern(width: 320, height: 192, frame: index), pts: Int64(index)) {
                let layers = try #require(VP9Superframe.unpack(frame.data), "libvpx SVC output is a superframe")
                sent.append(layers)
                packets += packetizeVP9(layers, pictureID: UInt16(index), interPredicted: !frame.isKeyframe, flexible: false, sequence: &sequence,
                                        timestamp: UInt32(index * 3_000), maximumPayload: 200,
                                        layerSizes: frame.isKeyframe ? [(80, 48), (160, 96), (320, 192)] : nil)
            }
        }
        #expect(sent.count == 30 && sent.allSatisfy { $0.count == 3 })
        let (out, harness) = assemble(packets, track: vp9Track)
        #expect(out.count == 30 && harness.receiver.counters(sender: Fixtures.sender).framesDropped.total == 0)
        #expect(out.first?.isKeyframe == true && out.first?.width == 320 && out.first?.height == 192)
        let decoder = try VPXDecoder(codec: .vp9)
        for (index, frame) in out.enumerated() {
            #expect(VP9Superframe.unpack(frame.data) == sent[index])
            #expect(try decoder.decode(frame.data).last.map { $0.width == 320 && $0.height == 192 } == true)
        }
    }

    @Test func aMissingMiddleFragmentDropsThePictureUntilTheNextKeyframe() throws {
        let frames = try vp9Frames(count: 25)
        var sequence: UInt16 = 0
        var packets: [RTPPacket] = []
        var times: [MonotonicTime] = []
        for (index, frame) in frames.enumerated() {
            var picture = packetizeVP9([frame.data], pictureID: UInt16(index), interPredicted: !frame.isKeyframe, flexible: false, sequence: &sequence,
                                       timestamp: UInt32(index * 3_000), maximumPayload: 40)
            if index == 4 { #expect(picture.count >= 3); picture.remove(at: 1) }
            packets += picture
            times += Array(repeating: .milliseconds(1_000 + Int64(index) * 200), count: picture.count)
        }
        let (out, harness) = assemble(packets, track: Fixtures.videoTrack(codec: "VP9", payloadType: 98, rtx: nil,
                                                                          feedback: FeedbackSupport(pictureLossIndication: true), rtxSSRCs: [:]), at: times)
        #expect(out.map(\.data) == frames[0..<4].map(\.data) + frames[10...].map(\.data))
        #expect(harness.pictureLossIndications >= 1)
    }
}
