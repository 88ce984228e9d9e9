import CWebMParser

/// What libwebm's parser saw in a WebM file: an independent reader of our muxer's output,
/// used by tests, `verify` and `repair`.
public struct WebMParsedFile: Sendable {
    public struct Element: Sendable, Equatable {
        public var id: UInt32
        public var position: UInt64
        public var headerSize: UInt32
        /// nil when the element's size is unknown.
        public var size: UInt64?
    }

    public struct EBMLHeader: Sendable, Equatable {
        public var version: UInt64, readVersion: UInt64, maxIDLength: UInt64, maxSizeLength: UInt64
        public var docType: String, docTypeVersion: UInt64, docTypeReadVersion: UInt64
    }

    public struct Info: Sendable, Equatable {
        public var timecodeScale: UInt64
        public var duration: Double?
        public var muxingApp: String?
        public var writingApp: String?
    }

    public struct Track: Sendable, Equatable {
        public var number: UInt64
        public var uid: UInt64
        public var type: UInt64
        public var codecID: String
        public var codecPrivate: [UInt8]
        public var codecDelay: UInt64
        public var seekPreRoll: UInt64
        public var usesLacing: Bool
        public var pixelWidth: UInt64
        public var pixelHeight: UInt64
        /// The video Projection's type and roll, when the file has one (nil otherwise).
        public var projection: Projection?
        public var samplingFrequency: Double
        public var channels: UInt64
    }

    public struct Projection: Sendable, Equatable {
        public var type: UInt64
        /// Counter-clockwise degrees.
        public var roll: Double

        public init(type: UInt64, roll: Double) {
            self.type = type
            self.roll = roll
        }
    }

    public struct Frame: Sendable, Equatable {
        public var track: UInt64
        /// Cluster timecode plus the block's relative timecode, in TimestampScale units.
        public var timecode: Int64
        public var isKeyframe: Bool
        public var isSimpleBlock: Bool
        public var data: [UInt8]
    }

    public struct Cluster: Sendable, Equatable {
        public var position: UInt64
        public var timecode: UInt64
        public var frames: [Frame]
        /// True once the parser has seen the cluster's end (it was not cut short).
        public var isComplete: Bool
    }

    public struct CuePoint: Sendable, Equatable {
        public var time: UInt64
        public var track: UInt64
        public var clusterPosition: UInt64
    }

    public struct Seek: Sendable, Equatable {
        public var id: UInt32
        public var position: UInt64
    }

    /// libwebm's status code at the end of parsing (see `Status`).
    public var status: Int32
    public var elements: [Element] = []
    public var ebmlHeader: EBMLHeader?
    public var info: Info?
    public var tracks: [Track] = []
    public var seeks: [Seek] = []
    public var clusters: [Cluster] = []
    public var cuePoints: [CuePoint] = []

    /// The parse reached the end of the document without error.
    public var isComplete: Bool { status == 0 }
    /// The input ended before the document did (a truncated or still-growing file).
    public var endedEarly: Bool { status == -1 || status == -2 || status == -3 }
    public var isParseError: Bool { status <= -1025 || status == CWEBM_STATUS_CANNOT_OPEN }

    public var completeClusters: [Cluster] { clusters.filter(\.isComplete) }
    public var frames: [Frame] { clusters.flatMap(\.frames) }

    /// Top-level elements directly inside the Segment, in order.
    public var segmentChildren: [Element] {
        guard let segment = elements.first(where: { $0.id == 0x1853_8067 }) else { return [] }
        // Positions and sizes come from the file: an EBML size fits 56 bits, but checked anyway.
        guard case let (dataStart, false) = segment.position.addingReportingOverflow(UInt64(segment.headerSize)) else { return [] }
        let dataEnd = segment.size.flatMap { size in Self.sum(dataStart, size) } ?? .max
        var children: [Element] = []
        var next = dataStart
        for element in elements where element.position == next && element.position < dataEnd {
            children.append(element)
            guard let size = element.size, let start = Self.sum(element.position, UInt64(element.headerSize)), let end = Self.sum(start, size)
            else { break }
            next = end
        }
        return children
    }

    private static func sum(_ a: UInt64, _ b: UInt64) -> UInt64? {
        let (value, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : value
    }

    public var segmentDataOffset: UInt64? {
        elements.first(where: { $0.id == 0x1853_8067 }).flatMap { Self.sum($0.position, UInt64($0.headerSize)) }
    }
}

public enum WebMReader {
    public static func parse(_ bytes: [UInt8]) -> WebMParsedFile {
        let collector = Collector()
        var callbacks = collector.callbacks()
        let status = bytes.withUnsafeBufferPointer { buffer in
            cwebm_parse_buffer(buffer.baseAddress, buffer.count, &callbacks)
        }
        return collector.finish(status: status)
    }

    /// Reads a file without keeping its frames: each goes to `onFrame` as the parser reaches
    /// it (clusters are kept, empty), so a long recording is read in constant memory.
    public static func read(path: String, onTrack: @escaping (WebMParsedFile.Track) -> Void = { _ in },
                            onFrame: @escaping (WebMParsedFile.Frame) -> Void) -> WebMParsedFile {
        streaming(onTrack, onFrame) { callbacks in cwebm_parse_file(path, &callbacks) }
    }

    /// The same over bytes in memory.
    public static func read(bytes: [UInt8], onTrack: @escaping (WebMParsedFile.Track) -> Void = { _ in },
                            onFrame: @escaping (WebMParsedFile.Frame) -> Void) -> WebMParsedFile {
        streaming(onTrack, onFrame) { callbacks in
            bytes.withUnsafeBufferPointer { buffer in cwebm_parse_buffer(buffer.baseAddress, buffer.count, &callbacks) }
        }
    }

    private static func streaming(_ onTrack: @escaping (WebMParsedFile.Track) -> Void, _ onFrame: @escaping (WebMParsedFile.Frame) -> Void,
                                  parse: (inout cwebm_callbacks) -> Int32) -> WebMParsedFile {
        let collector = Collector()
        collector.trackHandler = onTrack
        collector.frameHandler = onFrame
        var callbacks = collector.callbacks()
        let status = parse(&callbacks)
        return collector.finish(status: status)
    }

    public static func parse(path: String) -> WebMParsedFile {
        let collector = Collector()
        var callbacks = collector.callbacks()
        let status = cwebm_parse_file(path, &callbacks)
        return collector.finish(status: status)
    }
}

/// Receives the C callbacks; lives only for the duration of one parse.
private final class Collector {
    var result = WebMParsedFile(status: 0)
    var frameHandler: ((WebMParsedFile.Frame) -> Void)?
    var trackHandler: ((WebMParsedFile.Track) -> Void)?

    func callbacks() -> cwebm_callbacks {
        var c = cwebm_callbacks()
        c.context = Unmanaged.passUnretained(self).toOpaque()
        c.on_element = { context, id, position, headerSize, size in
            Collector.from(context).result.elements.append(.init(
                id: id, position: position, headerSize: headerSize, size: size == .max ? nil : size))
        }
        c.on_ebml = { context, header in
            guard let h = header?.pointee else { return }
            Collector.from(context).result.ebmlHeader = .init(
                version: h.ebml_version, readVersion: h.ebml_read_version, maxIDLength: h.max_id_length,
                maxSizeLength: h.max_size_length, docType: String(cString: h.doc_type),
                docTypeVersion: h.doc_type_version, docTypeReadVersion: h.doc_type_read_version)
        }
        c.on_info = { context, info in
            guard let i = info?.pointee else { return }
            Collector.from(context).result.info = .init(
                timecodeScale: i.timecode_scale, duration: i.has_duration != 0 ? i.duration : nil,
                muxingApp: i.muxing_app.map { String(cString: $0) },
                writingApp: i.writing_app.map { String(cString: $0) })
        }
        c.on_track = { context, track in
            guard let t = track?.pointee else { return }
            let codecPrivate = t.codec_private.map { Array(UnsafeBufferPointer(start: $0, count: t.codec_private_size)) } ?? []
            let collector = Collector.from(context)
            let parsed = WebMParsedFile.Track(
                number: t.number, uid: t.uid, type: t.type, codecID: String(cString: t.codec_id),
                codecPrivate: codecPrivate, codecDelay: t.codec_delay, seekPreRoll: t.seek_pre_roll,
                usesLacing: t.uses_lacing != 0, pixelWidth: t.pixel_width, pixelHeight: t.pixel_height,
                projection: t.has_projection != 0 ? WebMParsedFile.Projection(type: t.projection_type, roll: t.projection_pose_roll) : nil,
                samplingFrequency: t.sampling_frequency, channels: t.channels)
            collector.result.tracks.append(parsed)
            collector.trackHandler?(parsed)
        }
        c.on_seek = { context, id, position in
            Collector.from(context).result.seeks.append(.init(id: id, position: position))
        }
        c.on_cluster_begin = { context, position, timecode in
            Collector.from(context).result.clusters.append(.init(position: position, timecode: timecode, frames: [], isComplete: false))
        }
        c.on_cluster_end = { context in
            let collector = Collector.from(context)
            if !collector.result.clusters.isEmpty {
                collector.result.clusters[collector.result.clusters.count - 1].isComplete = true
            }
        }
        c.on_frame = { context, track, relative, keyframe, simple, data, size in
            let collector = Collector.from(context)
            guard !collector.result.clusters.isEmpty else { return }
            let index = collector.result.clusters.count - 1
            // A file may claim any 64-bit cluster timecode: saturate rather than trap.
            let base = Int64(clamping: collector.result.clusters[index].timecode)
            let (timecode, overflow) = base.addingReportingOverflow(Int64(relative))
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
            let frame = WebMParsedFile.Frame(track: track, timecode: overflow ? .max : timecode, isKeyframe: keyframe != 0,
                                             isSimpleBlock: simple != 0, data: bytes)
            if let handler = collector.frameHandler { handler(frame) } else { collector.result.clusters[index].frames.append(frame) }
        }
        c.on_cue_point = { context, time, track, position in
            Collector.from(context).result.cuePoints.append(.init(time: time, track: track, clusterPosition: position))
        }
        return c
    }

    func finish(status: Int32) -> WebMParsedFile {
        result.status = status
        return result
    }

    static func from(_ context: UnsafeMutableRawPointer?) -> Collector {
        Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
    }
}
