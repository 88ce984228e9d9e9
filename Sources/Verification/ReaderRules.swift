import WebMReader

/// What hisui's strict WebM reader needs, and Sora's layout, checked on libwebm's reading of
/// the file (recording-format.md). Each broken rule is one line.
enum ReaderRules {
    static let soraApp = "WebRTC SFU Sora"
    /// What `recbot compose` writes: not an archive hisui reads, so no Sora app strings, and a
    /// chat text track (WebVTT, in BlockGroups) besides video and audio.
    static let compositionApp = "recbot compose"
    static let videoCodecs: Set<String> = ["V_VP8", "V_VP9", "V_AV1", "V_MPEG4/ISO/AVC"]
    private static let segmentID: UInt32 = 0x1853_8067, seekHeadID: UInt32 = 0x114D_9B74, voidID: UInt32 = 0xEC
    private static let infoID: UInt32 = 0x1549_A966, tracksID: UInt32 = 0x1654_AE6B, clusterID: UInt32 = 0x1F43_B675
    private static let cuesID: UInt32 = 0x1C53_BB6B

    static func violations(_ file: WebMParsedFile, blocks: BlockSummary) -> [String] {
        header(file) + segment(file) + tracks(file) + blocks.violations
    }

    static func isComposition(_ file: WebMParsedFile) -> Bool {
        file.info.map { $0.muxingApp == compositionApp && $0.writingApp == compositionApp } ?? false
    }

    /// A composition's chat track: type 17 (subtitle), WebVTT, track 3.
    static func isChatTrack(_ track: WebMParsedFile.Track, in file: WebMParsedFile) -> Bool {
        isComposition(file) && track.type == 0x11 && track.codecID == WebVTTCueCheck.codecID && track.number == 3
    }

    private static func header(_ file: WebMParsedFile) -> [String] {
        var problems: [String] = []
        if let h = file.ebmlHeader {
            let values = [h.version, h.readVersion, h.maxIDLength, h.maxSizeLength, h.docTypeVersion, h.docTypeReadVersion]
            if values != [1, 1, 4, 8, 4, 2] || h.docType != "webm" {
                problems.append("EBML header is not EBMLVersion 1, ReadVersion 1, MaxIDLength 4, MaxSizeLength 8, DocType webm 4/2")
            }
        } else {
            problems.append("no EBML header")
        }
        if let info = file.info {
            if info.timecodeScale != 1_000_000 { problems.append("TimestampScale \(info.timecodeScale), hisui requires 1000000") }
            if (info.muxingApp != soraApp || info.writingApp != soraApp) && !isComposition(file) {
                problems.append("MuxingApp/WritingApp are not '\(soraApp)'")
            }
        } else {
            problems.append("no Info")
        }
        return problems
    }

    private static func segment(_ file: WebMParsedFile) -> [String] {
        var problems: [String] = []
        guard let segment = file.elements.first(where: { $0.id == segmentID }) else { return ["no Segment"] }
        if segment.size == nil { problems.append("Segment has an unknown size (not finalized)") }
        if file.elements.contains(where: { $0.size == nil && $0.id != segmentID }) { problems.append("elements of unknown size") }
        let order = file.segmentChildren.map(\.id).filter { $0 != voidID }
        guard let info = order.firstIndex(of: infoID) else { return problems }
        if order.index(after: info) >= order.count || order[order.index(after: info)] != tracksID { problems.append("Tracks does not directly follow Info") }
        guard let firstCluster = order.firstIndex(of: clusterID) else { return problems + ["no Cluster"] }
        if firstCluster < info { problems.append("a Cluster before Info") }
        let afterClusters = order[firstCluster...].drop { $0 == clusterID }
        if afterClusters.first != cuesID { problems.append("no Cues after the last Cluster") }
        if afterClusters.dropFirst().contains(clusterID) { problems.append("Clusters after Cues") }
        return problems
    }

    private static func tracks(_ file: WebMParsedFile) -> [String] {
        var problems: [String] = []
        for track in file.tracks {
            switch track.type {
            case 1:
                if track.number != 1 { problems.append("video is track \(track.number), hisui requires track 1") }
                if !videoCodecs.contains(track.codecID) { problems.append("video CodecID \(track.codecID) is not one hisui reads") }
                if track.codecID == "V_AV1" && track.codecPrivate.isEmpty { problems.append("V_AV1 without its av1C CodecPrivate") }
            case 2:
                if track.number != 2 { problems.append("audio is track \(track.number), hisui requires track 2") }
                if track.codecID != "A_OPUS" { problems.append("audio CodecID \(track.codecID), hisui decodes track 2 as Opus") }
                if track.codecPrivate.count != 19 || !track.codecPrivate.starts(with: Array("OpusHead".utf8)) { problems.append("audio CodecPrivate is not a 19-byte OpusHead") }
            case 0x11 where isChatTrack(track, in: file):
                break
            default:
                problems.append("track \(track.number) is neither video nor audio")
            }
            if track.usesLacing { problems.append("track \(track.number) allows lacing") }
        }
        if file.tracks.isEmpty { problems.append("no tracks") }
        if Set(file.tracks.map(\.number)).count != file.tracks.count { problems.append("duplicate track numbers") }
        return problems
    }
}

/// Block-level rules, gathered while frames stream past.
struct BlockSummary {
    private(set) var blockGroups = 0
    private(set) var foreignTrackBlocks = 0
    private(set) var decreasingTimestamps = 0
    private var lastTimestamp: [UInt64: Int64] = [:]

    /// Set by the caller for a V_MPEG4/ISO/AVC track: its frames must be Annex-B.
    var annexBTrack: UInt64?
    /// Set by the caller for a WebVTT track: cues need BlockGroups (for their duration).
    var textTrack: UInt64?
    private(set) var notAnnexB = 0

    mutating func note(_ frame: WebMParsedFile.Frame, isKnownTrack: Bool) {
        if frame.track == annexBTrack, !(frame.data.starts(with: [0, 0, 1]) || frame.data.starts(with: [0, 0, 0, 1])) { notAnnexB += 1 }
        if !frame.isSimpleBlock && frame.track != textTrack { blockGroups += 1 }
        if !isKnownTrack { foreignTrackBlocks += 1 }
        if let last = lastTimestamp[frame.track], frame.timecode < last { decreasingTimestamps += 1 }
        lastTimestamp[frame.track] = max(lastTimestamp[frame.track] ?? frame.timecode, frame.timecode)
    }

    var violations: [String] {
        var problems: [String] = []
        if blockGroups > 0 { problems.append("\(blockGroups) BlockGroup(s); hisui reads SimpleBlocks only") }
        if foreignTrackBlocks > 0 { problems.append("\(foreignTrackBlocks) block(s) for tracks not in Tracks") }
        if notAnnexB > 0 { problems.append("\(notAnnexB) H.264 frame(s) not in Annex-B (hisui reads V_MPEG4/ISO/AVC as Annex-B)") }
        if decreasingTimestamps > 0 { problems.append("\(decreasingTimestamps) block(s) earlier than the previous one of their track") }
        return problems
    }
}
