import Archive
import Foundation
import Outcomes
import Recorder

/// The catalog row a join records under: a new session, or, for `--continue-session`, the
/// session another process recorded, reopened in a new segment, with what that process left
/// (its parts, to number on from; its outages, to count on from; its last media, where the
/// failover's gap began).
struct SessionOpening {
    var record: SessionRecord
    var segment: Int
    var prior: PriorSession?

    /// What earlier segments of a continued session left in the catalog.
    struct PriorSession {
        var recordings: [RecordingRecord]
        var interruptions: [InterruptionRecord]
        /// Unix ms of the last media the previous process recorded, as far as the catalog
        /// knows (its files' ends, or their progress every few seconds).
        var lastMediaWallClock: Int64
        var parts: PriorParts {
            PriorParts(parts: recordings.map { ($0.connectionID, $0.part) })
        }
    }

    /// Why the session cannot be opened: the outcome the join ends with.
    struct Failure: Error {
        var cause: EndCause
        var reason: String
    }

    static func open(catalog: any CatalogStore, options: JoinOptions, id: String, now: Int64) throws(Failure) -> SessionOpening {
        var record = SessionRecord(
            id: id, channelID: options.connect.channelID, startedAt: now, clientID: options.connect.clientID,
            bundleID: options.connect.bundleID, recbotVersion: options.recbotVersion, hostname: ProcessInfo.processInfo.hostName,
            pid: Int(getpid()))
        (record.splitDuration, record.splitOnly, record.recordingMetadata) = (options.split?.seconds, options.split?.only, options.recordingMetadata)
        record.retainUntil = options.retentionMilliseconds.map { now + $0 }
        do {
            if options.sessionID != nil, try catalog.session(id: id) != nil {
                guard let continuation = options.continuation else {
                    throw Failure(cause: .invalidConfiguration, reason: "session \(id) exists already (--continue-session goes on with it)")
                }
                return try reopen(catalog: catalog, record: record, jobFence: continuation.jobFence, now: now)
            }
            try catalog.insertSession(record)
            return SessionOpening(record: record, segment: SessionSegmentRecord.first, prior: nil)
        } catch let failure as Failure {
            throw failure
        } catch let error as CatalogError {
            throw Failure(cause: error.endCause == .invalidConfiguration ? .invalidConfiguration : .storageFailed,
                          reason: error.endCause == .invalidConfiguration ? "\(error)" : "storage: \(error)")
        } catch {
            throw Failure(cause: .storageFailed, reason: "storage: \(error)")
        }
    }

    private static func reopen(catalog: any CatalogStore, record: SessionRecord, jobFence: Int64?, now: Int64) throws -> SessionOpening {
        let request = SessionReopen(sessionID: record.id, channelID: record.channelID, splitDuration: record.splitDuration,
                                    splitOnly: record.splitOnly, hostname: record.hostname, pid: record.pid,
                                    recbotVersion: record.recbotVersion, now: now, jobFence: jobFence)
        let reopened = try catalog.reopenSession(request)
        let recordings = try catalog.recordings(RecordingFilter(sessionID: record.id))
        let interruptions = try catalog.interruptions(sessionID: record.id)
        let previousEnd = try catalog.segments(sessionID: record.id).dropLast().last?.endedAt
        let lastMedia = recordings.map { $0.endedAt ?? ($0.startedAt + ($0.durationMs ?? 0)) }.max() ?? previousEnd ?? reopened.startedAt
        let prior = PriorSession(recordings: recordings, interruptions: interruptions, lastMediaWallClock: min(lastMedia, now))
        return SessionOpening(record: reopened, segment: reopened.segment ?? SessionSegmentRecord.first, prior: prior)
    }
}
