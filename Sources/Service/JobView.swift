import Archive
import DiskLayout
import Foundation
import ServiceCore

/// A job as the API and `recbot jobs --json` show it: snake_case keys, RFC 3339 UTC times.
public struct JobView: Codable, Sendable, Equatable {
    public var id: String
    public var channelId: String
    public var state: String
    public var origin: String
    public var rule: String?
    public var soraSessionId: String?
    public var createdAt: String
    public var expiresAt: String?
    public var startedAt: String?
    public var endedAt: String?
    public var stopRequestedAt: String?
    public var stopReason: String?
    public var workerHost: String?
    /// How many times a worker claimed it: 1, or more after a failover.
    public var fence: Int64
    public var exitStatus: Int?
    public var endReason: String?
    public var options: JobOptions?

    public init(_ job: JobRecord) {
        (id, channelId, state, origin, rule, soraSessionId) = (job.id, job.channelID, job.state.rawValue, job.origin.rawValue, job.rule, job.soraSessionID)
        createdAt = Self.time(job.createdAt)
        (expiresAt, startedAt, endedAt) = (job.expiresAt.map(Self.time), job.startedAt.map(Self.time), job.endedAt.map(Self.time))
        (stopRequestedAt, stopReason, workerHost) = (job.stopRequestedAt.map(Self.time), job.stopReason, job.workerHost)
        (fence, exitStatus, endReason) = (job.fence, job.exitStatus, job.endReason)
        options = try? JobOptions(stored: job.options)
    }

    static func time(_ milliseconds: Int64) -> String { rfc3339(milliseconds: milliseconds) }

    public static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
