/// What a file in a session's directory is, by its name (Sora's archive layout,
/// recording-format.md). The one classifier: the recorder names files by it, repair and verify
/// find media by it, the uploader orders and filters by it. A name it does not know (a
/// temporary `.tmp`, a dotfile, anything else) is not part of the recording.
public enum ArchiveFile: Equatable, Sendable {
    /// `archive-<id>.webm` (part 0) or `split-archive-<id>_<NNNN>.webm` (parts from 1).
    case media(connectionID: String, part: Int)
    /// The JSON beside a media file, named like it.
    case sidecar(connectionID: String, part: Int)
    /// `split-archive-end-<id>.json`: marks a sender's last split part.
    case splitEnd(connectionID: String)
    /// `report-<recording id>.json`: the whole recording, written last.
    case report(recordingID: String)
    /// `archive-<id>.messages.vtt` (or a split part's): the session's messages as captions for that file.
    case messages(connectionID: String, part: Int)
    /// `events.jsonl`: the session's notify, push and data-channel messages on its timeline.
    case eventLog
    /// `composed-<recording id>.webm`, or its chat `.vtt`: `recbot compose`'s file, made from the
    /// recording (uploaded after the report, and kept on disk where the catalog names it).
    case composition(recordingID: String, captions: Bool)

    static let messagesSuffix = ".messages.vtt"
    static let eventLogName = "events.jsonl"

    public init?(name: String) {
        if name == Self.eventLogName {
            self = .eventLog
        } else if let composition = Self.composition(name) {
            self = composition
        } else if let base = Self.strip(name, suffix: Self.messagesSuffix) {
            guard let (id, part) = Self.sender(base) else { return nil }
            self = .messages(connectionID: id, part: part)
        } else if let base = Self.strip(name, suffix: ".webm") {
            guard let (id, part) = Self.sender(base) else { return nil }
            self = .media(connectionID: id, part: part)
        } else if let base = Self.strip(name, suffix: ".json") {
            if let id = Self.strip(base, prefix: "split-archive-end-"), ArchiveLayout.isSafeConnectionID(id) {
                self = .splitEnd(connectionID: id)
            } else if let id = Self.strip(base, prefix: "report-"), ArchiveLayout.isSafeConnectionID(id) {
                self = .report(recordingID: id)
            } else if let (id, part) = Self.sender(base) {
                self = .sidecar(connectionID: id, part: part)
            } else {
                return nil
            }
        } else {
            return nil
        }
    }

    /// The order a session's files go to object storage: media, the sidecars that describe it,
    /// the split end markers, the exported events and captions, the report last (a consumer
    /// takes a sidecar to mean its media is there, and the report to mean everything is).
    public var uploadRank: Int {
        switch self {
        case .media: 0
        case .sidecar: 1
        case .splitEnd: 2
        case .messages, .eventLog: 3
        case .report: 4
        case .composition: 5
        }
    }

    /// A MIME type for object storage.
    public var contentType: String {
        switch self {
        case .media, .composition(_, captions: false): "video/webm"
        case .messages, .composition(_, captions: true): "text/vtt; charset=utf-8"
        case .eventLog: "application/x-ndjson"
        case .sidecar, .splitEnd, .report: "application/json"
        }
    }

    public var isComposition: Bool {
        if case .composition = self { return true }
        return false
    }

    private static func composition(_ name: String) -> ArchiveFile? {
        for (suffix, captions) in [(".webm", false), (".vtt", true)] {
            if let base = strip(name, suffix: suffix), let id = strip(base, prefix: "composed-"), ArchiveLayout.isSafeConnectionID(id) {
                return .composition(recordingID: id, captions: captions)
            }
        }
        return nil
    }

    public var isMedia: Bool {
        if case .media = self { return true }
        return false
    }

    /// `archive-<id>` or `split-archive-<id>_<NNNN>` with a safe id and a part from 1.
    private static func sender(_ base: String) -> (String, Int)? {
        if let id = strip(base, prefix: "archive-") {
            return ArchiveLayout.isSafeConnectionID(id) ? (id, 0) : nil
        }
        guard let rest = strip(base, prefix: "split-archive-"), let underscore = rest.lastIndex(of: "_") else { return nil }
        let id = String(rest[..<underscore])
        guard ArchiveLayout.isSafeConnectionID(id), let part = Int(rest[rest.index(after: underscore)...]), part > 0 else { return nil }
        return (id, part)
    }

    private static func strip(_ text: String, suffix: String) -> String? {
        text.hasSuffix(suffix) ? String(text.dropLast(suffix.count)) : nil
    }

    private static func strip(_ text: String, prefix: String) -> String? {
        text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : nil
    }
}
