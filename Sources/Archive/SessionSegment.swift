import GRDB

/// One process's turn at recording a session (`session_segments`): the first `join`, then each
/// worker that continued the session after the one before it died (a failover).
public struct SessionSegmentRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "session_segments"

    public var sessionID: String
    public var segment: Int
    public var hostname: String?
    public var pid: Int?
    /// The job's fencing token the process held (nil for a join no service started).
    public var jobFence: Int64?
    public var recbotVersion: String?
    public var startedAt: Int64
    public var endedAt: Int64?
    public var endReason: String?
    public var exitStatus: Int?

    public init(sessionID: String, segment: Int, hostname: String?, pid: Int?, jobFence: Int64?, recbotVersion: String?, startedAt: Int64,
                endedAt: Int64? = nil, endReason: String? = nil, exitStatus: Int? = nil) {
        (self.sessionID, self.segment, self.hostname, self.pid, self.jobFence) = (sessionID, segment, hostname, pid, jobFence)
        (self.recbotVersion, self.startedAt, self.endedAt, self.endReason, self.exitStatus) = (recbotVersion, startedAt, endedAt, endReason, exitStatus)
    }

    enum CodingKeys: String, CodingKey {
        case segment, hostname, pid
        case sessionID = "session_id", jobFence = "job_fence", recbotVersion = "recbot_version", startedAt = "started_at"
        case endedAt = "ended_at", endReason = "end_reason", exitStatus = "exit_status"
    }

    /// The segment a session's first process records (also what NULL in the catalog means).
    public static let first = 1
}

/// A process asking to continue a session another process recorded (`join --continue-session`).
public struct SessionReopen: Sendable, Equatable {
    public var sessionID: String
    /// Must be the session's: a job continues the channel it recorded.
    public var channelID: String
    /// Must be the session's split settings: parts of one session are cut on one grid.
    public var splitDuration: Int64?
    public var splitOnly: Bool?
    public var hostname: String?
    public var pid: Int?
    public var recbotVersion: String?
    public var now: Int64
    /// The fencing token of the job (whose id is the session's) this process was started for:
    /// the reopen is refused unless the job is running under exactly this token. Nil for a
    /// continuation no service asked for (an operator's), which is refused while the session's
    /// current segment has not ended.
    public var jobFence: Int64?

    public init(sessionID: String, channelID: String, splitDuration: Int64?, splitOnly: Bool?, hostname: String?, pid: Int?,
                recbotVersion: String?, now: Int64, jobFence: Int64?) {
        (self.sessionID, self.channelID, self.splitDuration, self.splitOnly) = (sessionID, channelID, splitDuration, splitOnly)
        (self.hostname, self.pid, self.recbotVersion, self.now, self.jobFence) = (hostname, pid, recbotVersion, now, jobFence)
    }

    /// Why the session cannot be continued by this request (nil: it can), from its row and
    /// whether the job holds the fence; both catalogs decide with this inside their transaction.
    public func refusal(of session: SessionRecord, fenceHeld: Bool) -> String? {
        if session.channelID != channelID {
            return "session \(sessionID) recorded channel \(session.channelID.debugDescription), not \(channelID.debugDescription)"
        }
        if session.splitDuration != splitDuration || (session.splitOnly ?? false) != (splitOnly ?? false) {
            return "session \(sessionID) was split as \(Self.describe(session.splitDuration, session.splitOnly)), not \(Self.describe(splitDuration, splitOnly))"
        }
        if jobFence != nil, !fenceHeld {
            return "job \(sessionID) is no longer running under fence \(jobFence ?? 0): another worker took it over, or it ended"
        }
        if jobFence == nil, session.endedAt == nil {
            return "session \(sessionID) is still being recorded (segment \(session.segment ?? SessionSegmentRecord.first)); only its job's next worker may take it over"
        }
        return nil
    }

    private static func describe(_ duration: Int64?, _ only: Bool?) -> String {
        guard let duration else { return "one file per sender" }
        return "\(duration) s parts\(only == true ? " only" : "")"
    }
}

/// Sessions recorded by more than one process, in either catalog.
public protocol SessionSegmentStore {
    /// Continues a session in a new segment, in one transaction: the previous segment is closed
    /// (with the session's end, if its process ended it), the session row names the new process
    /// and is open again, and the new segment's row is inserted. Refused (`.superseded`, or
    /// `.notFound`) as `SessionReopen.refusal` says; returns the session as it is now.
    func reopenSession(_ reopen: SessionReopen) throws(CatalogError) -> SessionRecord
    /// Oldest first.
    func segments(sessionID: String) throws(CatalogError) -> [SessionSegmentRecord]
    /// Ends `segment`: its own row, and the session when it is still the current one. A segment
    /// another process continued after (a failover) leaves the session open: no error.
    func endSegment(id: String, segment: Int, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError)
}
