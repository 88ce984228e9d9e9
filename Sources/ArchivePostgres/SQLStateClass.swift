/// What an SQLSTATE means for a catalog write: whether asking again can succeed.
///
/// A spooled write is deleted only when the server refused it for good, so this table decides
/// whether a failover or a busy server costs the catalog rows. From PostgreSQL's Appendix A
/// (error codes); a code not named here is a refusal.
enum SQLStateClass: Equatable {
    /// The user or password was refused.
    case credentials
    /// The connection is gone or going (the statement's fate may be unknown).
    case connectionLost
    /// The server rolled the statement back for a reason that passes: ask again later.
    case notNow
    /// The statement itself is wrong for this catalog: asking again gives the same answer.
    case refused

    static let readOnlyTransaction = "25006"

    init(_ state: String) {
        switch state {
        case "28P01", "28000":
            self = .credentials
        // 08: connection exceptions; 57P01-05: shutdown, crash, starting up, database dropped,
        // idle session timeout; 25P03: idle-in-transaction timeout ends the session; 40003:
        // the statement's completion is unknown.
        case _ where state.hasPrefix("08"), _ where state.hasPrefix("57P"), "25P03", "40003":
            self = .connectionLost
        // 25006: read-only transaction (a hot standby, or a primary demoted by a failover);
        // 57014: statement timeout or cancel; 40001, 40P01: serialization failure, deadlock;
        // 53: out of disk, memory, connections or a configured limit; 55P03, 55006: lock not
        // available, object in use; 58: I/O or system error on the server.
        case Self.readOnlyTransaction, "57014", "40001", "40P01", "55P03", "55006",
             _ where state.hasPrefix("53"), _ where state.hasPrefix("58"):
            self = .notNow
        default:
            self = .refused
        }
    }
}
