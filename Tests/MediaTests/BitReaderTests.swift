import Bitstreams
import Testing
import TestSupport

@Suite struct BitReaderTests {
    /// ITU-T H.264 Table 9-2 and §9.1.1: bit strings and their ue(v) and se(v) values.
    @Test func expGolombCodesReadAsTheStandardTabulates() throws {
        let table: [(bits: String, unsigned: UInt32, signed: Int32)] = [
            ("1", 0, 0), ("010", 1, 1), ("011", 2, -1), ("00100", 3, 2), ("00101", 4, -2), ("00110", 5, 3), ("00111", 6, -3),
            ("0001000", 7, 4), ("0001110", 13, 7),
        ]
        for row in table {
            var writer = BitWriter()
            for character in row.bits { writer.write(character == "1" ? 1 : 0, 1) }
            var unsigned = BitReader(writer.bytes), signed = BitReader(writer.bytes)
            #expect(try unsigned.readUnsignedExpGolomb() == row.unsigned, "\(row.bits)")
            #expect(try signed.readSignedExpGolomb() == row.signed, "\(row.bits)")
            #expect(unsigned.bitsLeft == writer.bytes.count * 8 - row.bits.count)
        }
    }

    @Test func theLargestCodesFitAndLongerOnesAreRefused() throws {
        var writer = BitWriter()
        writer.ue(UInt64(UInt32.max) - 1)  // 31 leading zeros: the longest 32-bit code
        var reader = BitReader(writer.bytes)
        #expect(try reader.readUnsignedExpGolomb() == UInt32.max - 1)
        var signed = BitReader(writer.bytes)
        #expect(try signed.readSignedExpGolomb() == -Int32(Int64(UInt32.max - 1) / 2))
        var tooLong = BitReader(Array(repeating: 0, count: 4) + [0x80])  // 32 leading zeros
        #expect(throws: BitstreamError.invalid("Exp-Golomb code longer than 32 bits")) { try tooLong.readUnsignedExpGolomb() }
        var truncated = BitReader([0x00, 0x01])  // 15 zeros, the one, then nothing
        #expect(throws: BitstreamError.truncated) { try truncated.readUnsignedExpGolomb() }
    }

    @Test func skipCrossesWordsAndStopsAtTheEnd() throws {
        var reader = BitReader(Array(repeating: 0xFF, count: 10) + [0x5A])
        try reader.skip(80)
        #expect(try reader.read(8) == 0x5A)
        var short = BitReader([0xFF])
        #expect(throws: BitstreamError.truncated) { try short.skip(9) }
    }
}

@Suite struct H264SequenceParameterSetTests {
    /// A Baseline SPS for 640×360: 40×23 macroblocks, cropped by 8 rows at the bottom.
    private func sps640x360(pocType: UInt64 = 0, level: UInt64 = 30) -> [UInt8] {
        var writer = BitWriter()
        writer.write(66, 8)  // profile_idc: Baseline
        writer.write(0, 8); writer.write(level, 8)  // constraint flags, level_idc
        writer.ue(0); writer.ue(0)  // seq_parameter_set_id, log2_max_frame_num_minus4
        writer.ue(pocType)
        if pocType == 0 { writer.ue(2) }
        if pocType == 1 {
            writer.write(0, 1); writer.se(-3); writer.se(5); writer.ue(2); writer.se(1); writer.se(-1)
        }
        writer.ue(1); writer.write(0, 1)  // max_num_ref_frames, gaps allowed
        writer.ue(39); writer.ue(22)  // width 40 macroblocks, height 23 map units
        writer.write(1, 1); writer.write(1, 1)  // frame_mbs_only, direct_8x8_inference
        writer.write(1, 1); writer.ue(0); writer.ue(0); writer.ue(0); writer.ue(4)  // cropped 4 × 2 rows at the bottom
        writer.write(0, 1)  // vui_parameters_present_flag
        writer.write(1, 1)  // rbsp_stop_one_bit
        return [0x67] + writer.bytes
    }

    @Test func pictureSizeIsReadThroughEveryPictureOrderCountType() {
        for pocType: UInt64 in [0, 1, 2] {
            let size = H264SPS.pictureSize(sps640x360(pocType: pocType))
            #expect(size?.width == 640 && size?.height == 360, "poc type \(pocType): \(String(describing: size))")
        }
    }

    @Test func emulationPreventionBytesAreRemovedBeforeReading() {
        // level_idc 0 puts 00 00 in a row, which a NAL unit carries as 00 00 03.
        var nal = sps640x360(level: 0)
        #expect(Array(nal[2...3]) == [0, 0])
        nal.insert(3, at: 4)
        let size = H264SPS.pictureSize(nal)
        #expect(size?.width == 640 && size?.height == 360, "\(String(describing: size))")
    }

    @Test func everyTruncationIsRefusedWithoutAGuess() {
        let whole = sps640x360()
        for length in 1..<(whole.count - 1) {
            #expect(H264SPS.pictureSize(Array(whole.prefix(length))) == nil, "\(length) of \(whole.count) bytes")
        }
    }
}
