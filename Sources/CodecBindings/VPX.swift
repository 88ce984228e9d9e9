import CVPX

public enum VPXCodec: Sendable {
    case vp8, vp9

    var encoderInterface: OpaquePointer? {
        switch self {
        case .vp8: vpx_codec_vp8_cx()
        case .vp9: vpx_codec_vp9_cx()
        }
    }

    var decoderInterface: OpaquePointer? {
        switch self {
        case .vp8: vpx_codec_vp8_dx()
        case .vp9: vpx_codec_vp9_dx()
        }
    }

    var name: String { self == .vp8 ? "VP8" : "VP9" }
}

public struct EncodedVideoFrame: Sendable {
    public var data: [UInt8]
    public var isKeyframe: Bool
    /// In the encoder's timebase (frames).
    public var pts: Int64
}

/// A planar I420 picture.
public struct I420Image: Sendable {
    public let width: Int
    public let height: Int
    public var y: [UInt8]
    public var u: [UInt8]
    public var v: [UInt8]

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
        y = [UInt8](repeating: 0, count: width * height)
        u = [UInt8](repeating: 128, count: (width / 2) * (height / 2))
        v = [UInt8](repeating: 128, count: (width / 2) * (height / 2))
    }

    /// A moving test pattern, different for every frame index.
    public static func testPattern(width: Int, height: Int, frame: Int) -> I420Image {
        var image = I420Image(width: width, height: height)
        for row in 0..<height {
            for column in 0..<width {
                image.y[row * width + column] = UInt8(truncatingIfNeeded: column + row + frame * 4)
            }
        }
        for row in 0..<(height / 2) {
            for column in 0..<(width / 2) {
                image.u[row * (width / 2) + column] = UInt8(truncatingIfNeeded: 128 + column - frame)
                image.v[row * (width / 2) + column] = UInt8(truncatingIfNeeded: 128 + row + frame)
            }
        }
        return image
    }
}

/// libvpx encoder, real-time settings.
public final class VPXEncoder {
    public let codec: VPXCodec
    public let width: Int
    public let height: Int
    private var context = vpx_codec_ctx_t()
    private var image = vpx_image_t()

    /// `spatialLayers` > 1 (VP9 only) makes a spatial SVC stream: each output is a superframe
    /// whose layers are each half the size of the next, the last at `width`x`height`.
    public init(codec: VPXCodec, width: Int, height: Int, framesPerSecond: Int = 30, bitrateKbps: Int = 500,
                keyframeInterval: Int = 60, spatialLayers: Int = 1, threads: Int = 1) throws(CodecError) {
        self.codec = codec
        self.width = width
        self.height = height
        var configuration = vpx_codec_enc_cfg_t()
        var status = vpx_codec_enc_config_default(codec.encoderInterface, &configuration, 0)
        guard status == VPX_CODEC_OK else { throw CodecError(codec: codec.name, operation: "config", code: Int32(status.rawValue), detail: "default config") }
        configuration.g_w = UInt32(width)
        configuration.g_h = UInt32(height)
        configuration.g_timebase = vpx_rational(num: 1, den: Int32(framesPerSecond))
        configuration.rc_target_bitrate = UInt32(bitrateKbps)
        configuration.g_lag_in_frames = 0
        configuration.g_threads = UInt32(max(1, threads))
        configuration.kf_mode = VPX_KF_AUTO
        configuration.kf_max_dist = UInt32(keyframeInterval)
        let svc = codec == .vp9 && spatialLayers > 1
        if svc { recbot_vpx_configure_vp9_svc(&configuration, Int32(spatialLayers)) }
        status = recbot_vpx_encoder_init(&context, codec.encoderInterface, &configuration)
        guard status == VPX_CODEC_OK else {
            throw CodecError(codec: codec.name, operation: "encoder init", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
        }
        if svc {
            status = recbot_vpx_enable_vp9_svc(&context, Int32(spatialLayers))
            guard status == VPX_CODEC_OK else {
                throw CodecError(codec: codec.name, operation: "svc", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
            }
        }
        _ = recbot_vpx_set_cpu_used(&context, 8)
    }

    deinit { vpx_codec_destroy(&context) }

    public func encode(_ picture: I420Image, pts: Int64, forceKeyframe: Bool = false) throws(CodecError) -> [EncodedVideoFrame] {
        var picture = picture
        let status: vpx_codec_err_t = picture.y.withUnsafeMutableBufferPointer { y in
            picture.u.withUnsafeMutableBufferPointer { u in
                picture.v.withUnsafeMutableBufferPointer { v in
                    vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(width), UInt32(height), 1, y.baseAddress)
                    image.planes.0 = y.baseAddress
                    image.planes.1 = u.baseAddress
                    image.planes.2 = v.baseAddress
                    image.stride.0 = Int32(width)
                    image.stride.1 = Int32(width / 2)
                    image.stride.2 = Int32(width / 2)
                    let flags = forceKeyframe ? recbot_vpx_force_keyframe_flag() : 0
                    return vpx_codec_encode(&context, &image, pts, 1, flags, UInt(recbot_vpx_deadline_realtime()))
                }
            }
        }
        guard status == VPX_CODEC_OK else {
            throw CodecError(codec: codec.name, operation: "encode", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
        }
        return drain()
    }

    public func flush() throws(CodecError) -> [EncodedVideoFrame] {
        let status = vpx_codec_encode(&context, nil, 0, 1, 0, UInt(recbot_vpx_deadline_realtime()))
        guard status == VPX_CODEC_OK else {
            throw CodecError(codec: codec.name, operation: "flush", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
        }
        return drain()
    }

    private func drain() -> [EncodedVideoFrame] {
        var frames: [EncodedVideoFrame] = []
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(&context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let frame = packet.pointee.data.frame
            let bytes = Array(UnsafeRawBufferPointer(start: frame.buf, count: frame.sz))
            frames.append(EncodedVideoFrame(data: bytes, isKeyframe: recbot_vpx_frame_is_keyframe(packet) != 0, pts: frame.pts))
        }
        return frames
    }
}

/// libvpx decoder: used to prove that recorded frames decode.
public final class VPXDecoder {
    public let codec: VPXCodec
    private var context = vpx_codec_ctx_t()

    public init(codec: VPXCodec) throws(CodecError) {
        self.codec = codec
        let status = recbot_vpx_decoder_init(&context, codec.decoderInterface)
        guard status == VPX_CODEC_OK else {
            throw CodecError(codec: codec.name, operation: "decoder init", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
        }
    }

    deinit { vpx_codec_destroy(&context) }

    /// Decodes one frame; returns the size of each picture it produced.
    public func decode(_ data: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        try decode(data) { image in (Int(image.pointee.d_w), Int(image.pointee.d_h)) }
    }

    /// Decodes one frame and hands each picture to `collect` while libvpx still owns it.
    func decode<Picture>(_ data: [UInt8], collect: (UnsafeMutablePointer<vpx_image_t>) -> Picture?) throws(CodecError) -> [Picture] {
        guard data.count <= Int(UInt32.max) else { throw CodecError(codec: codec.name, operation: "decode", code: -1, detail: "frame of \(data.count) bytes") }
        try refuseOversizedKeyframe(data)
        let status = data.withUnsafeBufferPointer { buffer in
            vpx_codec_decode(&context, buffer.baseAddress, UInt32(buffer.count), nil, 0)
        }
        guard status == VPX_CODEC_OK else {
            throw CodecError(codec: codec.name, operation: "decode", code: Int32(status.rawValue), detail: String(cString: vpx_codec_err_to_string(status)))
        }
        var pictures: [Picture] = []
        var iterator: vpx_codec_iter_t? = nil
        while let image = vpx_codec_get_frame(&context, &iterator) {
            if let picture = collect(image) { pictures.append(picture) }
        }
        return pictures
    }

    /// A keyframe may declare up to 16383×16383: libvpx would allocate and clear about 400 MB
    /// for it, a second per frame, so a crafted recording could keep `verify` busy for hours.
    /// Its header says the size before anything is decoded.
    private func refuseOversizedKeyframe(_ data: [UInt8]) throws(CodecError) {
        var info = vpx_codec_stream_info_t()
        info.sz = UInt32(MemoryLayout<vpx_codec_stream_info_t>.size)
        let status = data.withUnsafeBufferPointer { buffer in
            vpx_codec_peek_stream_info(codec.decoderInterface, buffer.baseAddress, UInt32(buffer.count), &info)
        }
        guard status == VPX_CODEC_OK, info.is_kf != 0 else { return }
        let (width, height) = (Int(info.w), Int(info.h))
        guard width * height > DecodeLimits.maximumPixels else { return }
        throw CodecError(codec: codec.name, operation: "decode", code: -1,
                         detail: "a \(width)x\(height) keyframe is larger than the verifier decodes (\(DecodeLimits.description))")
    }
}
