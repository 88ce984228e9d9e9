import Foundation

/// `POST /recordings`: Sora's StartRecording parameters (`channel_id`, `expire_time` in
/// seconds, `split_only`, `split_duration`, `metadata`), plus recbot's own options under the
/// same names as a rule's (`stop_when_idle`, `data_channels`, `upload` …).
public struct RecordingRequest: Sendable, Equatable {
    public var channelID: String
    /// Seconds from now until the recording ends at the latest.
    public var expireTime: Int64?
    public var options: JobOptions

    /// The largest body read: the metadata is the only part that can be big.
    public static let maximumBodyBytes = 128 * 1024

    public init(body: [UInt8]) throws(RecordingRequestError) {
        guard body.count <= Self.maximumBodyBytes else { throw .invalid("body of \(body.count) bytes is over \(Self.maximumBodyBytes)") }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { throw .invalid("body is not a JSON object") }
        let known = RecordingRules.optionKeys.union(["channel_id", "expire_time", "metadata"]).subtracting(["recording_metadata"])
        if let unknown = Set(object.keys).subtracting(known).sorted().first { throw .invalid("unknown key \(unknown.prefix(64))") }
        do {
            channelID = try SoraWebhookError.identifier(object, "channel_id")
        } catch {
            throw .invalid(error.description)
        }
        var options = JobOptions()
        expireTime = try Self.seconds(object, "expire_time")
        options.duration = try Self.seconds(object, "duration")
        options.splitDuration = try Self.seconds(object, "split_duration")
        options.splitOnly = try Self.value(object, "split_only", as: Bool.self)
        options.recordingMetadata = JSONText.render(object["metadata"])
        options.dataChannels = try Self.value(object, "data_channels", as: [String].self)
        options.simulcastRid = try Self.value(object, "simulcast_rid", as: String.self)
        options.stopWhenIdle = try Self.seconds(object, "stop_when_idle")
        options.waitForSenders = try Self.seconds(object, "wait_for_senders")
        options.upload = try Self.value(object, "upload", as: String.self)
        options.webhookUrls = try Self.value(object, "webhook_urls", as: [String].self)
        options.export = try Self.value(object, "export", as: Bool.self)
        options.retentionDays = try Self.seconds(object, "retention_days")  // a whole number, as the seconds are
        if let expireTime, !(1...JobOptions.maximumSeconds).contains(expireTime) { throw .invalid("expire_time is out of range") }
        do { try options.validate() } catch { throw .invalid(error.description) }
        self.options = options
    }

    /// JSON's true and false. On Linux `raw is Bool` also holds for the numbers 0 and 1, so the
    /// number's own type decides (a boolean is stored as a char).
    static func isBoolean(_ raw: Any) -> Bool {
        guard let number = raw as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func value<T>(_ object: [String: Any], _ key: String, as type: T.Type) throws(RecordingRequestError) -> T? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        if T.self == Bool.self, !isBoolean(raw) { throw .invalid("\(key) has the wrong type") }
        guard let value = raw as? T else { throw .invalid("\(key) has the wrong type") }
        return value
    }

    /// A whole number of seconds (JSON integers arrive as Int; 3600.0 is accepted too).
    private static func seconds(_ object: [String: Any], _ key: String) throws(RecordingRequestError) -> Int64? {
        guard let raw = object[key], !(raw is NSNull) else { return nil }
        if isBoolean(raw) { throw .invalid("\(key) is not a number of seconds") }
        if let integer = raw as? Int { return Int64(integer) }
        if let double = raw as? Double, double.rounded() == double, abs(double) <= Double(JobOptions.maximumSeconds) { return Int64(double) }
        throw .invalid("\(key) is not a number of seconds")
    }
}

public enum RecordingRequestError: Error, Equatable, CustomStringConvertible {
    case invalid(String)
    public var description: String {
        switch self { case .invalid(let why): why }
    }
}
