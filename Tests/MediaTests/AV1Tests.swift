import Bitstreams
import Foundation
import Media
import RTP
import Testing
import TestSupport
import WireCoding

/// The test side's own AV1 payloader, from the payload format's text: OBUs lose their size
/// field (unless `keepSizeFields`), elements carry LEB128 lengths, and with `useW` a packet of at
/// most three elements says how many in W and leaves the last one's length out.
func packetizeAV1(_ unit: AV1TemporalUnit, sequence: inout UInt16, timestamp: UInt32, maximumPayload: Int = 1_200,
                  useW: Bool = true, keepSizeFields: Bool = false, startsSequence: Bool = false) -> [RTPPacket] {
    let obus = unit.obus.map { keepSizeFields ? $0 : withoutSizeField($0) }
    var bodies: [(elements: [[UInt8]], z: Bool, y: Bool)] = []
    var current: [[UInt8]] = [], currentZ = false, used = 1
    func flush(y: Bool) {
        if !current.isEmpty { bodies.append((current, currentZ, y)) }
        current = []; currentZ = false; used = 1
    }
    for obu in obus {
        var rest = obu[...]
        var isContinuation = false
        while !rest.isEmpty {
            let room = maximumPayload - used - 4  // room for a length field
            if room < 8 { flush(y: false); continue }
            let piece = rest.prefix(room)
            if current.isEmpty { currentZ = isContinuation }
            current.append(Array(piece))
            used += piece.count + 4
            rest = rest.dropFirst(piece.count)
            isContinuation = true
            if !rest.isEmpty { flush(y: true) }
        }
    }
    flush(y: false)
    var packets: [RTPPacket] = []
    for (index, body) in bodies.enumerated() {
        let w = useW && body.elements.count <= 3 ? body.elements.count : 0
        var payload: [UInt8] = [(body.z ? 0x80 : 0) | (body.y ? 0x40 : 0) | UInt8(w) << 4 | (startsSequence && index == 0 ? 0x08 : 0)]
        for (position, element) in body.elements.enumerated() {
            if w == 0 || position < w - 1 { LEB128.append(element.count, to: &payload) }
            payload += element
        }
        var builder = RTPPacketBuilder(payloadType: 45, sequenceNumber: sequence, timestamp: timestamp, ssrc: 1)
        builder.marker = index == bodies.count - 1
        packets.append(try! RTPPacket(parsing: builder.build(payload: payload)))
        sequence &+= 1
    }
    return packets
}

/// The OBU with obu_has_size_field cleared and the size field removed.
func withoutSizeField(_ obu: [UInt8]) -> [UInt8] {
    let header = try! AV1OBUHeader(parsing: obu[...])
    let sizeField = LEB128.read(obu[header.length...])!
    return [obu[0] & ~0x02] + obu[1..<header.length] + obu[(header.length + sizeField.length)...]
}

let av1Track = Fixtures.videoTrack(codec: "AV1", payloadType: 45, rtx: 46)

func packetizeAll(_ units: [AV1TemporalUnit], maximumPayload: Int = 1_200, useW: Bool = true, keepSizeFields: Bool = false) -> [RTPPacket] {
    var sequence: UInt16 = 65_000
    return units.enumerated().flatMap { index, unit in
        packetizeAV1(unit, sequence: &sequence, timestamp: UInt32(index * 3_000), maximumPayload: maximumPayload, useW: useW,
                     keepSizeFields: keepSizeFields, startsSequence: unit.isKeyframe)
    }
}

@Suite struct AV1AssemblyTests {
    @Test(arguments: [(true, false), (false, false), (true, true), (false, true)])
    func libaomTemporalUnitsRoundTrip(useW: Bool, keepSizeFields: Bool) throws {
        let units = try av1TemporalUnits(frames: 30, width: 160, height: 96)
        // Small packets: large OBUs become fragment chains over several packets.
        let packets = packetizeAll(units, maximumPayload: 120, useW: useW, keepSizeFields: keepSizeFields)
        #expect(packets.count > units.count * 2)
        let (out, harness) = assemble(packets, track: av1Track)
        #expect(out.map(\.data) == units.map(\.data))
        #expect(out.map(\.isKeyframe) == units.map(\.isKeyframe) && out.filter(\.isKeyframe).count == 3)
        #expect(out.first?.width == 160 && out.first?.height == 96)
        #expect(harness.receiver.counters(sender: Fixtures.sender).framesDropped.total == 0)
    }

    /// A new sequence header with a new size (an encoder restarted at another resolution).
    @Test func aResolutionChangeComesWithTheNextKeyframe() throws {
        let units = try av1TemporalUnits(frames: 12, width: 160, height: 96) + av1TemporalUnits(frames: 12, width: 224, height: 128)
        let (out, _) = assemble(packetizeAll(units), track: av1Track)
        #expect(out.count == 24)
        let sizes = out.filter(\.isKeyframe).map { "\($0.width ?? 0)x\($0.height ?? 0)" }
        #expect(sizes == ["160x96", "160x96", "224x128", "224x128"])
    }

    @Test func aMissingMiddleFragmentDropsTheUnitUntilTheNextKeyframe() throws {
        let units = try av1TemporalUnits(frames: 25, width: 160, height: 96)
        var sequence: UInt16 = 0
        var packets: [RTPPacket] = []
        var times: [MonotonicTime] = []
        for (index, unit) in units.enumerated() {
            var picture = packetizeAV1(unit, sequence: &sequence, timestamp: UInt32(index * 3_000), maximumPayload: 16)
            if index == 4 { #expect(picture.count >= 3); picture.remove(at: 1) }
            if index == 13 { picture.remove(at: 0) }  // the first packet: the next one continues a fragment
            packets += picture
            times += Array(repeating: .milliseconds(1_000 + Int64(index) * 200), count: picture.count)
        }
        let (out, harness) = assemble(packets, track: Fixtures.videoTrack(codec: "AV1", payloadType: 45, rtx: nil,
                                                                          feedback: FeedbackSupport(pictureLossIndication: true), rtxSSRCs: [:]), at: times)
        #expect(out.map(\.data) == units[0..<4].map(\.data) + units[10..<13].map(\.data) + units[20...].map(\.data))
        #expect(harness.pictureLossIndications >= 2)
    }
}

@Suite struct AV1PayloadTests {
    let depacketizer = AV1Depacketizer()
    // libaom's sequence header for 160x120 4:2:0 (OBU header, size, payload) and a key frame's first bytes.
    static let sequenceHeader: [UInt8] = [0x0A, 0x0A, 0x00, 0x00, 0x00, 0x03, 0xB4, 0xFF, 0x73, 0x6B, 0xE4, 0x01]
    static var sequenceHeaderUnsized: [UInt8] { withoutSizeField(sequenceHeader) }

    func assemble(_ payloads: [[UInt8]]) throws(DepacketizeError) -> EncodedFrame {
        try depacketizer.assemble(payloads.map { $0[...] }, timestamp: 0)
    }

    @Test func everyAggregationHeaderFieldIsRead() throws {
        let metadata: [UInt8] = [0x28, 0x01, 0x02, 0x03]  // type 5, no size field
        let padding: [UInt8] = [0x78, 0xAA]  // type 15
        let delimiter: [UInt8] = [0x10]  // type 2
        let withExtension: [UInt8] = [0x2C, 0x48, 0x07]  // metadata with an extension byte (temporal 2, spatial 1)
        // W = 0: every element has a length; N set.
        let w0 = try assemble([[0x08, UInt8(delimiter.count)] + delimiter + [UInt8(metadata.count)] + metadata + [UInt8(padding.count)] + padding])
        #expect(w0.data == [0x2A, 0x03, 0x01, 0x02, 0x03])  // size field added, delimiter and padding gone
        // W = 2: the second element runs to the end of the packet.
        let w2 = try assemble([[0x20, UInt8(metadata.count)] + metadata + withExtension])
        #expect(w2.data == [0x2A, 0x03, 0x01, 0x02, 0x03, 0x2E, 0x48, 0x01, 0x07])
        // Z and Y: one OBU in three pieces, over three packets.
        let split = try assemble([[0x50, 0x28, 0x01], [0xD0, 0x02], [0x90, 0x03]])
        #expect(split.data == [0x2A, 0x03, 0x01, 0x02, 0x03])
        #expect(!split.isKeyframe && split.width == nil)
    }

    @Test func aSequenceHeaderWithAKeyFrameIsAKeyframe() throws {
        // A frame header: show_existing_frame 0, KEY_FRAME, show_frame 1, then zeros (no size override, no render size).
        let keyFrameHeader: [UInt8] = [0x18, 0x10, 0x00, 0x00, 0x00]  // type 3, no size field
        let frame = try assemble([[0x20, UInt8(AV1PayloadTests.sequenceHeaderUnsized.count)] + AV1PayloadTests.sequenceHeaderUnsized + keyFrameHeader])
        #expect(frame.isKeyframe && frame.width == 160 && frame.height == 120)
        // The same frame header without the sequence header: not a place to start.
        #expect(try !assemble([[0x10] + keyFrameHeader]).isKeyframe)
        // An inter frame after the sequence header is not a key frame either.
        let inter = try assemble([[0x20, UInt8(AV1PayloadTests.sequenceHeaderUnsized.count)] + AV1PayloadTests.sequenceHeaderUnsized + [0x18, 0x30, 0]])
        #expect(!inter.isKeyframe)
    }

    @Test func badPayloadsAreRejected() {
        let cases: [(String, [[UInt8]])] = [
            ("continuation without start", [[0x90, 0x28, 0x01]]),
            ("fragment never ends", [[0x50, 0x28, 0x01]]),
            ("fragment not continued", [[0x50, 0x28, 0x01], [0x10, 0x28, 0x01]]),
            ("W says three, two present", [[0x30, 0x02, 0x28, 0x01, 0x28, 0x02]]),
            ("length past the packet", [[0x00, 0x09, 0x28, 0x01]]),
            ("LEB128 that never ends", [[0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]),
            ("LEB128 over 2^32", [[0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x28]]),
            ("OBU size past its element", [[0x10, 0x2A, 0x7F, 0x01]]),
            ("forbidden bit", [[0x10, 0xA8, 0x01]]),
            ("impossible sequence header", [[0x10, 0x08, 0xE0, 0, 0, 0]]),  // seq_profile 7
            ("truncated sequence header", [[0x10, 0x08, 0x00]]),
            ("only a temporal delimiter", [[0x10, 0x10]]),
            ("empty payload", [[]]),
        ]
        for (name, payloads) in cases {
            #expect(throws: DepacketizeError.self, "\(name)") { try assemble(payloads) }
        }
    }

    @Test func frameStartsAreWholeOpeningOBUs() {
        #expect(depacketizer.isFrameStart([0x18, 0x0A, 0x00][...]))  // W=1, sequence header
        #expect(depacketizer.isFrameStart([0x00, 0x02, 0x32, 0x00][...]))  // W=0, frame OBU
        #expect(!depacketizer.isFrameStart([0x90, 0x32, 0x00][...]))  // Z: a continuation
        #expect(!depacketizer.isFrameStart([0x10, 0x22, 0x00][...]))  // a tile group does not open a unit
        #expect(!depacketizer.isFrameStart([0x10, 0x36, 0x08, 0x00][...]))  // a frame of spatial layer 1
    }

    @Test func randomPayloadsNeverCrash() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 1...3, using: &generator)
            let payloads = (0..<count).map { _ in (0..<Int.random(in: 0...24, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }[...] }
            _ = depacketizer.isFrameStart(payloads[0])
            _ = try? depacketizer.assemble(payloads, timestamp: 0)
        }
    }
}
