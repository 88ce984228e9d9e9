/// Retention in either catalog: holds, and the marks `recbot prune` leaves.
public protocol RetentionStore {
    /// Puts a session on hold (`at`), or takes it off (nil). False when there is no such session.
    func holdSession(id: String, at: Int64?, reason: String?) throws(CatalogError) -> Bool
    /// Marks the session's recordings on `host` (every host's when nil) pruned at `at`, and
    /// the session once none of its rows is left unpruned; deletes its events when asked. In
    /// one transaction that first checks the session is still ended and not held (refused with
    /// `.superseded` otherwise, so a hold that came after the selection wins).
    func markPruned(sessionID: String, host: String?, at: Int64, deletingEvents: Bool) throws(CatalogError) -> PruneMark
}

/// What `markPruned` changed.
public struct PruneMark: Sendable, Equatable {
    public var recordings: Int
    /// Every host's files of the session are gone now.
    public var sessionPruned: Bool
    public var eventsDeleted: Int

    public init(recordings: Int, sessionPruned: Bool, eventsDeleted: Int) {
        (self.recordings, self.sessionPruned, self.eventsDeleted) = (recordings, sessionPruned, eventsDeleted)
    }

    /// Why a session may not be pruned now (nil: it may), from its row as the transaction reads it.
    public static func refusal(_ session: SessionRecord) -> String? {
        if session.heldAt != nil { return "session \(session.id) is on hold" }
        if session.endedAt == nil { return "session \(session.id) is still being recorded" }
        return nil
    }
}
