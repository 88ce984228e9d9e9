/// What recbot needs from a catalog, whatever keeps it: the embedded SQLite file (`Catalog`,
/// the default) or a PostgreSQL server shared by a fleet (`PostgresCatalog`). Both apply the
/// same migrations and answer the same queries in the same order, so `recbot sessions list
/// --json` prints the same document from either.
///
/// Synchronous on purpose: writes run on the join's catalog-writer queue and the query
/// commands are one-shot, so neither gains from async, and a blocking call keeps the two
/// implementations interchangeable for every caller.
public protocol CatalogStore: JobStore, SessionSegmentStore, RetentionStore, MessageSearchStore, CompositionStore {
    /// Where the catalog lives, for messages: a file path, or a URL without its password.
    var location: String { get }

    // MARK: Writes made by a recording session
    func insertSession(_ session: SessionRecord) throws(CatalogError)
    /// Ends the session and its current segment, whichever process that is (`recbot repair`,
    /// writes spooled by versions without segments). `exitStatus` is nil when no process
    /// reported one (a session `recbot repair` ended).
    func endSession(id: String, endedAt: Int64, endReason: String, exitStatus: Int?) throws(CatalogError)
    /// Fills in what signaling learned after the session row was created (nil keeps a value).
    func updateSession(id: String, soraSessionID: String?, connectionID: String?, clientID: String?, bundleID: String?,
                       signalingURL: String?) throws(CatalogError)
    /// Inserts the connection, or refreshes it when the session already knows it.
    @discardableResult func upsertConnection(_ connection: ConnectionRecord) throws(CatalogError) -> ConnectionRecord
    @discardableResult func insertRecording(_ recording: RecordingRecord) throws(CatalogError) -> RecordingRecord
    /// Rewrites a recording's row, found by its id.
    func updateRecording(_ recording: RecordingRecord) throws(CatalogError)
    /// Stores a finished recording over the row its file got when it was created (found by
    /// the path it had then: a first part is renamed when a split follows), or inserts it.
    @discardableResult func completeRecording(_ recording: RecordingRecord, createdPath: String) throws(CatalogError) -> RecordingRecord
    /// What a file holds so far, while it is still being written.
    func updateRecordingProgress(sessionID: String, path: String, progress: RecordingProgress) throws(CatalogError)
    /// What the session refused or dropped.
    func recordSessionCounters(id: String, counters: SessionCounters) throws(CatalogError)
    /// `recbot verify`'s verdict on a recording (the latest run wins); the file was found.
    func recordVerification(recordingID: Int64, status: VerificationStatus, at time: Int64, report: String) throws(CatalogError)
    /// `recbot verify` looked for the file on its host and did not find it. The verdict stays.
    func recordMissing(recordingID: Int64, at time: Int64) throws(CatalogError)
    /// Many events in one transaction.
    func insertEvents(_ events: [EventRecord]) throws(CatalogError)
    @discardableResult func insertEvent(_ event: EventRecord) throws(CatalogError) -> EventRecord
    /// Inserts the upload of a file, or rewrites the row its session, file and object already have.
    @discardableResult func saveUpload(_ upload: UploadRecord) throws(CatalogError) -> UploadRecord
    /// Inserts an outage of the session, or rewrites the row its session and ordinal already have.
    func saveInterruption(_ interruption: InterruptionRecord) throws(CatalogError)

    // MARK: Queries
    /// Newest first.
    func sessions(_ filter: SessionFilter) throws(CatalogError) -> [SessionRecord]
    func session(id: String) throws(CatalogError) -> SessionRecord?
    /// In the order they were first seen.
    func connections(sessionID: String) throws(CatalogError) -> [ConnectionRecord]
    func recording(id: Int64) throws(CatalogError) -> RecordingRecord?
    /// The recording stored at this catalog path (relative to the data directory).
    func recording(path: String) throws(CatalogError) -> RecordingRecord?
    /// Oldest first, within a session by sender and part.
    func recordings(_ filter: RecordingFilter) throws(CatalogError) -> [RecordingRecord]
    /// In arrival order.
    func events(_ filter: EventFilter) throws(CatalogError) -> [EventRecord]
    func eventCounts(sessionID: String) throws(CatalogError) -> [EventCount]
    /// By session, then in the order the files were first sent.
    func uploads(_ filter: UploadFilter) throws(CatalogError) -> [UploadRecord]
    /// A session's outages, in order.
    func interruptions(sessionID: String) throws(CatalogError) -> [InterruptionRecord]
    /// Migration identifiers recorded as applied, in order.
    func appliedMigrations() throws(CatalogError) -> [String]

    // MARK: The webhook outbox
    /// Adds rows; one whose event id and URL are already there is skipped (a replayed write).
    func enqueueWebhooks(_ rows: [WebhookRecord]) throws(CatalogError)
    /// Pending rows in id order (due or not), for listings and tests.
    func pendingWebhooks(limit: Int) throws(CatalogError) -> [WebhookRecord]
    /// Leases to `claim.owner` the rows that may go now: of each (URL, recording), the oldest
    /// pending row, when it is due, no live lease holds it and its credentials are the
    /// claimant's; at most `perURL` leased per URL; the longest due first. Atomic against
    /// every other process on the catalog (SQLite's write lock; PostgreSQL's row locks with
    /// SKIP LOCKED), so no two processes send one row at once.
    func claimWebhooks(_ claim: WebhookClaim) throws(CatalogError) -> [WebhookRecord]
    /// Stores a claimed row's attempt (status, attempts, next attempt, delivery, error) and ends
    /// the lease, only while `owner` still holds it: false when it does not (then nothing is written).
    func recordWebhookAttempt(_ row: WebhookRecord, owner: String) throws(CatalogError) -> Bool
    /// The owners of leases that have not run out.
    func webhookLeaseOwners(now: Int64) throws(CatalogError) -> [String]
    /// Ends `owner`'s leases (it is known dead): its rows may go at once.
    func releaseWebhookLeases(owner: String) throws(CatalogError) -> Int
    /// When the claimant's next row may be due (nil: none pending), for a drain to wait on.
    func nextWebhookDue(credentials: String) throws(CatalogError) -> Int64?
    /// Deletes delivered rows delivered before `before`; returns how many.
    func pruneDeliveredWebhooks(before: Int64) throws(CatalogError) -> Int
    /// Newest first.
    func webhooks(_ filter: WebhookFilter) throws(CatalogError) -> [WebhookRecord]
    func webhookCounts() throws(CatalogError) -> WebhookCounts
    /// Failed rows (all, or these ids) go back to pending, due now, with a new window.
    func retryFailedWebhooks(ids: [Int64]?, now: Int64, expiresAt: Int64) throws(CatalogError) -> Int
}

extension CatalogStore {
    public func sessions() throws(CatalogError) -> [SessionRecord] { try sessions(SessionFilter()) }
    public func recordings() throws(CatalogError) -> [RecordingRecord] { try recordings(RecordingFilter()) }
}

/// The migrations this binary carries (migrations/*.sql, embedded at build time), for the
/// catalog implementations outside this module.
public enum CatalogMigrations {
    public static var all: [(identifier: String, sql: String)] { EmbeddedMigrations.all }
    public static var identifiers: [String] { all.map(\.identifier) }
}
