/// Which sessions a prune takes, and what it also removes (`recbot prune`, the service's
/// retention pass).
public struct PrunePolicy: Sendable, Equatable {
    /// `--older-than`: sessions that started before this (Unix ms).
    public var startedBefore: Int64?
    /// `--expired`: sessions whose own retention (`retain_until`) ended by this time.
    public var expiredBy: Int64?
    public var channel: String?
    /// The host whose files are pruned here (`--host`, RECBOT_HOST): a fleet's other hosts
    /// prune their own.
    public var host: String
    /// An upload destination configured here: a session must have reached it first.
    public var upload: UploadTarget?
    /// `--events`: the session's events go too (by default they stay, with the rows).
    public var deleteEvents = false

    /// Where uploads go: a session counts as uploaded when its report is there (it goes last).
    public struct UploadTarget: Sendable, Equatable {
        public var objectURLPrefix: String
        public var endpoint: String

        public init(objectURLPrefix: String, endpoint: String) { (self.objectURLPrefix, self.endpoint) = (objectURLPrefix, endpoint) }
    }

    public init(startedBefore: Int64? = nil, expiredBy: Int64? = nil, channel: String? = nil, host: String, upload: UploadTarget? = nil) {
        (self.startedBefore, self.expiredBy, self.channel, self.host, self.upload) = (startedBefore, expiredBy, channel, host, upload)
    }
}
