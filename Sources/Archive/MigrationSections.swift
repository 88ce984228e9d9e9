/// One migration file serves both catalogs. Where they must differ (a search index is an FTS5
/// table in SQLite and a pg_trgm index in PostgreSQL), a line `-- recbot:sqlite-only` or
/// `-- recbot:postgres-only` starts statements for one catalog, and `-- recbot:both` ends them.
public enum MigrationDialect: Sendable {
    case sqlite, postgres

    /// The migration's text with the other catalog's sections removed (blank lines keep line
    /// numbers, so an error still points at the right line).
    public func sql(of migration: String) -> String {
        var keep = true
        var lines: [Substring] = []
        for line in migration.split(separator: "\n", omittingEmptySubsequences: false) {
            switch line.trimmingTrailingSpaces {
            case "-- recbot:sqlite-only": keep = self == .sqlite
            case "-- recbot:postgres-only": keep = self == .postgres
            case "-- recbot:both": keep = true
            default:
                lines.append(keep ? line : "")
                continue
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }
}

extension Substring {
    fileprivate var trimmingTrailingSpaces: Substring {
        var text = self
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return text
    }
}
