/// What a receiver reads from a VP9 frame's uncompressed header (VP9 specification §6.2):
/// whether it is a keyframe and, for one, its size.
public struct VP9FrameHeader: Sendable, Equatable {
    public var isKeyframe: Bool
    public var width: Int?
    public var height: Int?

    /// Nil when the bytes are not the start of a VP9 frame, or end before what is read.
    public init?(_ frame: [UInt8]) {
        var bits = BitReader(frame)
        guard let header = try? Self.read(&bits) else { return nil }
        self = header
    }

    private init(isKeyframe: Bool, width: Int? = nil, height: Int? = nil) {
        (self.isKeyframe, self.width, self.height) = (isKeyframe, width, height)
    }

    private static func read(_ bits: inout BitReader) throws(BitstreamError) -> VP9FrameHeader {
        guard try bits.read(2) == 2 else { throw .invalid("frame_marker") }
        let low = try bits.read(1)
        let profile = try bits.read(1) << 1 | low
        if profile == 3 { guard try bits.read(1) == 0 else { throw .invalid("reserved_zero") } }
        if try bits.flag() { return VP9FrameHeader(isKeyframe: false) }  // show_existing_frame
        let isKeyframe = try bits.read(1) == 0  // frame_type
        try bits.skip(2)  // show_frame, error_resilient_mode
        guard isKeyframe else { return VP9FrameHeader(isKeyframe: false) }
        guard try bits.read(24) == 0x49_83_42 else { throw .invalid("frame_sync_code") }
        try skipColorConfig(&bits, profile: profile)
        let width = Int(try bits.read(16)) + 1
        let height = Int(try bits.read(16)) + 1
        return VP9FrameHeader(isKeyframe: true, width: width, height: height)
    }

    /// color_config() (§6.2.2), read only to get past it.
    private static func skipColorConfig(_ bits: inout BitReader, profile: UInt64) throws(BitstreamError) {
        if profile >= 2 { try bits.skip(1) }  // ten_or_twelve_bit
        let colorSpace = try bits.read(3)
        if colorSpace != 7 {  // not sRGB
            try bits.skip(1)  // color_range
            if profile == 1 || profile == 3 { try bits.skip(3) }  // subsampling_x, subsampling_y, reserved_zero
        } else if profile == 1 || profile == 3 {
            try bits.skip(1)  // reserved_zero
        }
    }
}
