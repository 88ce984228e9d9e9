import Foundation

/// Sora's archive layout under the recordings root (recording-format.md):
/// `<root>/<recording id>/archive-<connection id>.webm|.json`, `report-<recording id>.json`.
public struct ArchiveLayout: Sendable {
    public let recordingsRoot: String
    public let recordingID: String

    public init(recordingsRoot: String, recordingID: String) {
        self.recordingsRoot = recordingsRoot
        self.recordingID = recordingID
    }

    public var directory: String { Self.join(recordingsRoot, recordingID) }
    public var reportPath: String { path(of: reportFilename) }
    public var reportFilename: String { "report-\(recordingID).json" }

    /// A file of this session's directory. Only the last component of `name` is used, so a
    /// name from a catalog or a listing can never lead out of the directory.
    public func path(of name: String) -> String {
        Self.join(directory, name.split(separator: "/").last.map(String.init) ?? "")
    }

    /// The one place a directory and a name become a path.
    public static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
    /// A file of this session as the catalog names it: relative to the data directory, so the
    /// directory can move.
    public func catalogPath(_ filename: String) -> String { "\(DataDirectory.recordingsFolder)/\(recordingID)/\(filename)" }

    /// Part 0 is the sender's one file; parts from 1 are split parts (a codec change starts one).
    public func mediaFilename(connectionID: String, part: Int = 0) -> String { baseName(connectionID, part) + ".webm" }
    public func sidecarFilename(connectionID: String, part: Int = 0) -> String { baseName(connectionID, part) + ".json" }
    /// The session's messages as WebVTT captions on this media file's timeline (`recbot export`).
    public func messagesFilename(connectionID: String, part: Int = 0) -> String { baseName(connectionID, part) + ArchiveFile.messagesSuffix }
    /// Every notify, push and data-channel message of the session, one JSON object a line (`recbot export`).
    public var eventLogFilename: String { ArchiveFile.eventLogName }
    /// `recbot compose`'s default output: the whole session in one file.
    public var compositionFilename: String { "composed-\(recordingID).webm" }
    /// The session's chat on the composition's timeline, beside it (`recbot compose`).
    public var compositionCaptionsFilename: String { "composed-\(recordingID).vtt" }
    /// The captions file beside a composition written to `path`.
    public static func captionsPath(besideComposition path: String) -> String {
        (path.hasSuffix(".webm") ? String(path.dropLast(5)) : path) + ".vtt"
    }
    /// Marks the last split part of a sender (JSON only).
    public func splitEndFilename(connectionID: String) -> String { "split-archive-end-\(connectionID).json" }

    /// Sora's four-digit split index ("0001").
    public static func splitIndex(_ part: Int) -> String {
        let digits = String(part)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private func baseName(_ connectionID: String, _ part: Int) -> String {
        part == 0 ? "archive-\(connectionID)" : "split-archive-\(connectionID)_\(ArchiveLayout.splitIndex(part))"
    }

    /// Connection ids come from the network: only ids that cannot name anything but a
    /// file in this directory are used in paths (Sora's are 26 Crockford base32 characters).
    public static func isSafeConnectionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
        }
    }

    public func createDirectory() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Writes JSON atomically (temporary file, fsync, rename), as the uploader expects.
    public static func writeJSON(_ object: Any, to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        try writeAtomically(data, to: path)
    }

    /// Writes a file atomically: a reader (the uploader) sees the old contents or the new, never a part.
    public static func writeAtomically(_ data: Data, to path: String) throws {
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary])
        }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temporary))
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces atomically: a reader sees the old sidecar or the new, never none.
        guard rename(temporary, path) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
        syncDirectory(of: path)
    }

    /// fsync of the directory, so the rename itself survives a power loss.
    static func syncDirectory(of path: String) {
        let descriptor = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = close(descriptor)
    }
}

/// RFC 3339 with milliseconds in UTC, e.g. 2026-11-22T01:52:22.123Z. RFC 3339 has four-digit
/// years, so a time outside years 0000–9999 (only a damaged catalog holds one) is written as
/// the nearest end of that range rather than as something no reader parses.
public func rfc3339(milliseconds: Int64) -> String {
    let representable: ClosedRange<Int64> = -62_167_219_200_000...253_402_300_799_999  // 0000-01-01 … 9999-12-31T23:59:59.999
    let clamped = min(max(milliseconds, representable.lowerBound), representable.upperBound)
    let (quotient, remainder) = clamped.quotientAndRemainder(dividingBy: 1000)
    var seconds = time_t(remainder < 0 ? quotient - 1 : quotient)
    let millis = remainder < 0 ? remainder + 1000 : remainder
    var parts = tm()
    gmtime_r(&seconds, &parts)
    return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                  Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
}
