import Outcomes

extension CatalogError {
    /// What this failure means for the run: the server's reachability and credentials are told
    /// apart (a fleet's alerting tells a down database from a full disk), a location that does not
    /// parse is configuration, a row asked for and absent is "not found", anything else is storage.
    public var endCause: EndCause {
        switch reason {
        case .unreachable, .unavailable: .catalogUnreachable
        case .credentials: .catalogCredentialsRefused
        case .badLocation: .invalidConfiguration
        case .notFound: .notFound
        case .notSQLite, .corrupt, .newerSchema, .olderSchema, .cannotCreateDirectory, .sqlite, .server, .rowsRefused: .storageFailed
        // Another worker holds the job now: this one must not record it (a configuration of the fleet, not storage).
        case .superseded: .invalidConfiguration
        }
    }
}
