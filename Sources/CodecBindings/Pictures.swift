import CDav1d
import COpenH264
import CVPX
import CYUV

extension VPXDecoder {
    /// Decodes one frame and returns its pictures (copied out of libvpx's buffers, which the
    /// next decode reuses). Odd sizes are cropped to even: I420 chroma is half size.
    public func decodePictures(_ data: [UInt8]) throws(CodecError) -> [I420Image] {
        try decode(data, collect: { image in I420Image(copying: image) })
    }
}

extension AV1Decoder {
    /// Decodes one temporal unit to its pictures: 8-bit 4:2:0 ones (what WebRTC senders send);
    /// others are skipped.
    public func decodePictures(_ temporalUnit: [UInt8]) throws(CodecError) -> [I420Image] {
        try decode(temporalUnit, collect: { picture in I420Image(copying: picture) })
    }
}

extension H264Decoder {
    /// Decodes one Annex-B access unit to its picture (OpenH264 puts out I420).
    public func decodePictures(_ accessUnit: [UInt8]) throws(CodecError) -> [I420Image] {
        try decode(accessUnit, collect: { picture in I420Image(copying: picture) })
    }
}

extension I420Image {
    init?(copying picture: recbot_openh264_picture) {
        let (width, height) = (Int(picture.width) & ~1, Int(picture.height) & ~1)
        guard width > 0, height > 0, picture.strides.0 >= width, picture.strides.1 >= width / 2,
              let y = picture.planes.0, let u = picture.planes.1, let v = picture.planes.2 else { return nil }
        self.init(width: width, height: height)
        Self.copy(from: UnsafeMutablePointer(mutating: y), stride: Int(picture.strides.0), rows: height, columns: width, into: &self.y)
        Self.copy(from: UnsafeMutablePointer(mutating: u), stride: Int(picture.strides.1), rows: height / 2, columns: width / 2, into: &self.u)
        Self.copy(from: UnsafeMutablePointer(mutating: v), stride: Int(picture.strides.1), rows: height / 2, columns: width / 2, into: &self.v)
    }

    init?(copying picture: Dav1dPicture) {
        let (width, height) = (Int(picture.p.w) & ~1, Int(picture.p.h) & ~1)
        guard width > 0, height > 0, picture.p.bpc == 8, picture.p.layout == DAV1D_PIXEL_LAYOUT_I420,
              let y = picture.data.0, let u = picture.data.1, let v = picture.data.2 else { return nil }
        self.init(width: width, height: height)
        Self.copy(from: y.assumingMemoryBound(to: UInt8.self), stride: Int(picture.stride.0), rows: height, columns: width, into: &self.y)
        Self.copy(from: u.assumingMemoryBound(to: UInt8.self), stride: Int(picture.stride.1), rows: height / 2, columns: width / 2, into: &self.u)
        Self.copy(from: v.assumingMemoryBound(to: UInt8.self), stride: Int(picture.stride.1), rows: height / 2, columns: width / 2, into: &self.v)
    }

    init?(copying image: UnsafeMutablePointer<vpx_image_t>) {
        let picture = image.pointee
        let (width, height) = (Int(picture.d_w) & ~1, Int(picture.d_h) & ~1)
        guard width > 0, height > 0, picture.fmt == VPX_IMG_FMT_I420 || picture.fmt == VPX_IMG_FMT_YV12,
              let y = picture.planes.0, let u = picture.planes.1, let v = picture.planes.2 else { return nil }
        self.init(width: width, height: height)
        let swapChroma = picture.fmt == VPX_IMG_FMT_YV12
        Self.copy(from: y, stride: Int(picture.stride.0), rows: height, columns: width, into: &self.y)
        Self.copy(from: swapChroma ? v : u, stride: Int(swapChroma ? picture.stride.2 : picture.stride.1), rows: height / 2, columns: width / 2, into: &self.u)
        Self.copy(from: swapChroma ? u : v, stride: Int(swapChroma ? picture.stride.1 : picture.stride.2), rows: height / 2, columns: width / 2, into: &self.v)
    }

    private static func copy(from plane: UnsafeMutablePointer<UInt8>, stride: Int, rows: Int, columns: Int, into target: inout [UInt8]) {
        target.withUnsafeMutableBufferPointer { out in
            for row in 0..<rows {
                (out.baseAddress! + row * columns).update(from: plane + row * stride, count: columns)
            }
        }
    }

    /// Fills a rectangle with one colour (black is Y 16, U and V 128).
    public mutating func fill(x: Int, y top: Int, width: Int, height: Int, luma: UInt8 = 16, cb: UInt8 = 128, cr: UInt8 = 128) {
        let (x, top, width, height) = (x & ~1, top & ~1, width & ~1, height & ~1)
        let fullWidth = self.width
        // A rectangle off the picture (a layout's region or cell) fills only what is on it.
        guard x >= 0, top >= 0, width > 0, height > 0, x < fullWidth, top < self.height else { return }
        for row in top..<min(top + height, self.height) {
            let start = row * fullWidth + x
            self.y.withUnsafeMutableBufferPointer { $0[start..<(start + min(width, fullWidth - x))].update(repeating: luma) }
        }
        let chromaWidth = fullWidth / 2
        for row in (top / 2)..<min((top + height) / 2, self.height / 2) {
            let start = row * chromaWidth + x / 2
            let count = min(width / 2, chromaWidth - x / 2)
            u.withUnsafeMutableBufferPointer { $0[start..<(start + count)].update(repeating: cb) }
            v.withUnsafeMutableBufferPointer { $0[start..<(start + count)].update(repeating: cr) }
        }
    }

    /// Scales `source` into the rectangle at (x, y), `width`×`height` (even values), with
    /// libyuv's bilinear filter.
    public mutating func place(_ source: I420Image, x: Int, y top: Int, width: Int, height: Int) {
        let (x, top, width, height) = (x & ~1, top & ~1, width & ~1, height & ~1)
        guard width > 0, height > 0, x + width <= self.width, top + height <= self.height else { return }
        let stride = self.width
        let chromaStride = stride / 2
        source.y.withUnsafeBufferPointer { sy in source.u.withUnsafeBufferPointer { su in source.v.withUnsafeBufferPointer { sv in
            self.y.withUnsafeMutableBufferPointer { dy in self.u.withUnsafeMutableBufferPointer { du in self.v.withUnsafeMutableBufferPointer { dv in
                _ = I420Scale(sy.baseAddress, Int32(source.width), su.baseAddress, Int32(source.width / 2), sv.baseAddress, Int32(source.width / 2),
                              Int32(source.width), Int32(source.height),
                              dy.baseAddress! + top * stride + x, Int32(stride),
                              du.baseAddress! + (top / 2) * chromaStride + x / 2, Int32(chromaStride),
                              dv.baseAddress! + (top / 2) * chromaStride + x / 2, Int32(chromaStride),
                              Int32(width), Int32(height), kFilterBilinear)
            } } }
        } } }
    }
}

extension OpusDecoder {
    /// Decodes one packet to interleaved 48 kHz samples (`channels` per frame).
    public func decodePCM(_ packet: [UInt8]) throws(CodecError) -> [Int16] {
        var pcm = [Int16](repeating: 0, count: 5760 * channels)
        let samples = try decode(packet, into: &pcm)
        return Array(pcm.prefix(samples * channels))
    }
}
