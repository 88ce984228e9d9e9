import Foundation

/// How one job records: the options of the rule that matched, or of the API call. Stored as
/// JSON in the job's row, and turned into the arguments of its `recbot join`. Durations are
/// seconds, as in Sora's recording API.
public struct JobOptions: Codable, Sendable, Equatable {
    /// The recording ends after this long at most (a cap on top of the room's own end).
    public var duration: Int64?
    public var splitDuration: Int64?
    public var splitOnly: Bool?
    /// JSON text stored with the recording (`recording_metadata`).
    public var recordingMetadata: String?
    /// Messaging channels to subscribe to ("#chat", "#chat:compress").
    public var dataChannels: [String]?
    /// The simulcast layer to receive (r0, r1, r2).
    public var simulcastRid: String?
    public var stopWhenIdle: Int64?
    public var waitForSenders: Int64?
    /// s3://bucket[/prefix] to upload the session to when it ends.
    public var upload: String?
    public var webhookUrls: [String]?
    /// Write events.jsonl and the WebVTT captions when the session ends.
    public var export: Bool?
    /// Keep the recording this many days: then the service's retention pass (or
    /// `recbot prune --expired`) removes its files, once it is verified (and uploaded).
    public var retentionDays: Int64?

    public init() {}

    public static let maximumSeconds: Int64 = 3_650 * 86_400

    /// Checks every value; the first bad one is the error, naming its key.
    public func validate() throws(JobOptionsError) {
        for (key, seconds) in [("duration", duration), ("stop_when_idle", stopWhenIdle), ("wait_for_senders", waitForSenders)] {
            if let seconds, !(1...Self.maximumSeconds).contains(seconds) { throw .outOfRange(key) }
        }
        if let splitDuration, !(1...86_400).contains(splitDuration) { throw .outOfRange("split_duration") }
        if let retentionDays, !(1...3_650).contains(retentionDays) { throw .outOfRange("retention_days") }
        if splitOnly == true, splitDuration == nil { throw .invalid("split_only", "needs split_duration") }
        if let recordingMetadata, recordingMetadata.utf8.count > 65_536 { throw .invalid("recording_metadata", "is over 64 KiB") }
        for label in dataChannels ?? [] where !(label.hasPrefix("#") && (2...64).contains(label.utf8.count)) {
            throw .invalid("data_channels", "\(label.prefix(70)) is not a #label of at most 64 bytes")
        }
        if let simulcastRid, !["r0", "r1", "r2"].contains(simulcastRid) { throw .invalid("simulcast_rid", "is not r0, r1 or r2") }
        if let upload, !upload.hasPrefix("s3://") || upload.utf8.count > 1024 { throw .invalid("upload", "is not an s3:// URL") }
        for url in webhookUrls ?? [] where !(url.hasPrefix("http://") || url.hasPrefix("https://")) || url.utf8.count > 2048 {
            throw .invalid("webhook_urls", "\(url.prefix(80)) is not an http(s) URL")
        }
    }

    /// The `recbot join` flags for these options, with the time left until the job's expiry.
    /// `secondsRecorded`: how long the job has been recording already (a worker that took it
    /// over continues it): the duration cap counts from the job's start, not this worker's.
    public func joinArguments(secondsLeft: Int64?, secondsRecorded: Int64 = 0) -> [String] {
        var arguments: [String] = []
        let durationLeft = duration.map { $0 - max(0, secondsRecorded) }
        if let limit = [durationLeft, secondsLeft].compactMap({ $0 }).min() { arguments += ["--duration", "\(max(limit, 1))s"] }
        if let splitDuration { arguments += ["--split-duration", "\(splitDuration)"] }
        if splitOnly == true { arguments.append("--split-only") }
        if let recordingMetadata { arguments += ["--recording-metadata", recordingMetadata] }
        for label in dataChannels ?? [] { arguments += ["--data-channel", label] }
        if let simulcastRid { arguments += ["--simulcast-rid", simulcastRid] }
        if let stopWhenIdle { arguments += ["--stop-when-idle", "\(stopWhenIdle)s"] }
        if let waitForSenders { arguments += ["--wait-for-senders", "\(waitForSenders)s"] }
        if let upload { arguments += ["--upload", upload] }
        for url in webhookUrls ?? [] { arguments += ["--webhook-url", url] }
        if export == true { arguments.append("--export") }
        if let retentionDays { arguments += ["--retention", "\(retentionDays)d"] }
        return arguments
    }

    /// As stored in the job's row.
    public func encoded() -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// From a job's row.
    public init(stored text: String) throws {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        self = try decoder.decode(JobOptions.self, from: Data(text.utf8))
    }
}

public enum JobOptionsError: Error, Equatable, CustomStringConvertible {
    case outOfRange(String)
    case invalid(String, String)

    public var description: String {
        switch self {
        case .outOfRange(let key): "\(key) is out of range"
        case .invalid(let key, let why): "\(key) \(why)"
        }
    }
}
