import CodecBindings

/// One sender's files decoded in step with the composition's clock: the picture to show at a
/// time, and its audio for each 20 ms slot, placed by the files' own timestamps (a gap stays
/// silent, an overlap is dropped, nothing is stretched).
final class SenderTrack {
    let connectionID: String
    let files: [SourceFile]
    var firstSeen: Int64 { files.first?.start ?? 0 }

    private var videoFile: Int?
    private var videoNext = 0
    private var videoDecoder: PictureDecoder?
    private(set) var picture: I420Image?
    private(set) var decodeErrors = 0

    private var audioFile = 0
    private var audioNext = 0
    private var audioDecoder: OpusDecoder?
    /// Decoded samples (stereo, interleaved) from sample `pcmStart` on the session's 48 kHz timeline.
    private var pcm: [Int16] = []
    private var pcmStart: Int64 = 0

    init(connectionID: String, files: [SourceFile]) {
        self.connectionID = connectionID
        self.files = files.sorted { $0.start < $1.start }
    }

    /// The file shown at `time`: the latest-starting one that covers it.
    func file(at time: Int64) -> Int? {
        files.indices.last { files[$0].start <= time && time < files[$0].end }
    }

    func isPresent(at time: Int64) -> Bool { file(at: time) != nil }

    /// Whether this sender's video can be drawn (VP8, VP9, AV1 and H.264).
    func drawsVideo(at time: Int64) -> Bool {
        guard let index = file(at: time) else { return false }
        return files[index].videoCodec.map(SourceFile.drawable.contains) ?? false
    }

    static func decoder(_ codec: SourceFile.VideoCodec) -> PictureDecoder? {
        switch codec {
        case .vp8: return try? VPXDecoder(codec: .vp8)
        case .vp9: return try? VPXDecoder(codec: .vp9)
        case .av1: return try? AV1Decoder()
        case .h264: return try? H264Decoder(concealingErrors: true)
        }
    }

    /// Decodes up to `time` and returns the picture showing then (nil before the first).
    func picture(at time: Int64) -> I420Image? {
        guard let index = file(at: time) else { return nil }
        if index != videoFile {
            videoFile = index
            videoNext = 0
            picture = nil
            videoDecoder = files[index].videoCodec.flatMap(Self.decoder)
            // Frames before `time` in a file joined mid-way: decode from its start (a picture needs its keyframe).
        }
        let frames = files[index].video
        while videoNext < frames.count, frames[videoNext].at <= time {
            if let decoder = videoDecoder {
                do {
                    if let last = try decoder.decodePictures(frames[videoNext].data).last { picture = last }
                } catch {
                    decodeErrors += 1
                }
            }
            videoNext += 1
        }
        return picture
    }

    /// 960 stereo samples (20 ms) from session sample `start` (48 per millisecond).
    func audio(from start: Int64, samples: Int) -> [Int16] {
        let end = start + Int64(samples)
        decodeAudio(until: end)
        var slot = [Int16](repeating: 0, count: samples * 2)
        let offset = start - pcmStart
        for index in 0..<samples {
            let position = offset + Int64(index)
            guard position >= 0, position < Int64(pcm.count / 2) else { continue }
            slot[index * 2] = pcm[Int(position) * 2]
            slot[index * 2 + 1] = pcm[Int(position) * 2 + 1]
        }
        // Keep only what later slots can still use.
        let keep = max(0, Int(min(Int64(pcm.count / 2), end - pcmStart)))
        if keep > 0 { pcm.removeFirst(keep * 2); pcmStart += Int64(keep) }
        return slot
    }

    private func decodeAudio(until end: Int64) {
        while audioFile < files.count {
            let file = files[audioFile]
            if audioDecoder == nil { audioDecoder = try? OpusDecoder(channels: 2) }
            guard audioNext < file.audio.count else {
                audioFile += 1
                audioNext = 0
                audioDecoder = nil
                continue
            }
            let frame = file.audio[audioNext]
            let position = frame.at * 48
            guard position < end else { return }
            audioNext += 1
            guard let decoder = audioDecoder, var samples = try? decoder.decodePCM(frame.data) else { decodeErrors += 1; continue }
            let pcmEnd = pcmStart + Int64(pcm.count / 2)
            if pcm.isEmpty && position > pcmStart { pcmStart = position }
            if position > pcmEnd && !pcm.isEmpty {
                pcm += [Int16](repeating: 0, count: Int(position - pcmEnd) * 2)  // a gap: silence as long as it was
            } else if position < pcmEnd {
                let overlap = Int(min(Int64(samples.count / 2), pcmEnd - position))
                samples.removeFirst(overlap * 2)
            }
            pcm += samples
        }
    }
}

/// A decoder that gives pictures to draw.
protocol PictureDecoder: AnyObject {
    func decodePictures(_ data: [UInt8]) throws(CodecError) -> [I420Image]
}

extension VPXDecoder: PictureDecoder {}
extension AV1Decoder: PictureDecoder {}
extension H264Decoder: PictureDecoder {}
