import CDav1d

/// dav1d decoder (Debian libdav1d-dev): proves that recorded AV1 temporal units decode.
public final class AV1Decoder {
    private var context: OpaquePointer?

    public init() throws(CodecError) {
        var settings = Dav1dSettings()
        dav1d_default_settings(&settings)
        settings.n_threads = 1
        settings.max_frame_delay = 1  // a picture per temporal unit, as it is sent
        settings.frame_size_limit = UInt32(DecodeLimits.maximumPixels)  // see DecodeLimits
        let status = dav1d_open(&context, &settings)
        guard status == 0, context != nil else { throw CodecError(codec: "AV1", operation: "open", code: status, detail: "dav1d_open") }
    }

    deinit { dav1d_close(&context) }

    /// Decodes one temporal unit; returns the size of each picture it produced.
    public func decode(_ temporalUnit: [UInt8]) throws(CodecError) -> [(width: Int, height: Int)] {
        try decode(temporalUnit) { picture in (Int(picture.p.w), Int(picture.p.h)) }
    }

    /// Decodes one temporal unit and hands each picture to `collect` before dav1d releases it.
    func decode<Picture>(_ temporalUnit: [UInt8], collect: (Dav1dPicture) -> Picture?) throws(CodecError) -> [Picture] {
        guard !temporalUnit.isEmpty else { throw CodecError(codec: "AV1", operation: "decode", code: -1, detail: "empty temporal unit") }
        var data = Dav1dData()
        guard let buffer = dav1d_data_create(&data, temporalUnit.count) else {
            throw CodecError(codec: "AV1", operation: "decode", code: -1, detail: "cannot allocate input")
        }
        temporalUnit.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: $0.count) }
        defer { dav1d_data_unref(&data) }
        var pictures: [Picture] = []
        while data.sz > 0 {
            let status = dav1d_send_data(context, &data)
            if status < 0 && status != recbot_dav1d_eagain() {
                throw CodecError(codec: "AV1", operation: "decode", code: status, detail: "dav1d_send_data")
            }
            try drain(into: &pictures, collect: collect)
        }
        return pictures
    }

    private func drain<Picture>(into pictures: inout [Picture], collect: (Dav1dPicture) -> Picture?) throws(CodecError) {
        while true {
            var picture = Dav1dPicture()
            let status = dav1d_get_picture(context, &picture)
            if status == recbot_dav1d_eagain() { return }
            guard status == 0 else { throw CodecError(codec: "AV1", operation: "decode", code: status, detail: "dav1d_get_picture") }
            if let collected = collect(picture) { pictures.append(collected) }
            dav1d_picture_unref(&picture)
        }
    }
}
