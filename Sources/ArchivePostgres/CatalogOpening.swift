import Archive
import Logging

/// Opens whichever catalog a location names; the one place that knows both kinds.
extension CatalogLocation {
    /// For `join`: creates the catalog when missing and applies pending migrations.
    public func open(logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) -> any CatalogStore {
        switch self {
        case .sqlite(let path): try Catalog(path: path, logger: logger)
        case .postgres(let url): try PostgresCatalog(url: url, logger: logger)
        }
    }

    /// For `verify` and `repair`: an SQLite file only if it exists (nil otherwise); a PostgreSQL
    /// database is migrated, as a join would.
    public func openExisting(logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) -> (any CatalogStore)? {
        switch self {
        case .sqlite(let path): try Catalog.openExisting(path: path)
        case .postgres(let url): try PostgresCatalog(url: url, logger: logger)
        }
    }

    /// For the query commands: never creates or migrates; nil when nothing was recorded there.
    public func openForQuery(logger: Logger = Logger(label: "recbot.catalog")) throws(CatalogError) -> (any CatalogStore)? {
        switch self {
        case .sqlite(let path): try Catalog.openForQuery(path: path)
        case .postgres(let url): try PostgresCatalog.openForQuery(url: url, logger: logger)
        }
    }
}
