import Archive
import PostgresNIO

/// `recbot compose`'s files in PostgreSQL: the same contract as the SQLite catalog's.
extension PostgresCatalog: CompositionStore {
    public func saveComposition(_ composition: CompositionRecord) throws(CatalogError) {
        let columns = composition.postgresColumns
        try link.withConnection { db in
            _ = try db.query(PostgresQuery(unsafeSQL: columns.upsert(into: "compositions", conflictKeys: ["session_id", "path"]), binds: columns.binds))
        }
    }

    public func compositions(_ filter: CompositionFilter) throws(CatalogError) -> [CompositionRecord] {
        var query = FilteredQuery("SELECT \(CompositionRecord.selectColumns) FROM compositions")
        if let session = filter.sessionID { query.require("session_id = ", session) }
        if let channel = filter.channelID { query.require("session_id IN (SELECT id FROM sessions WHERE channel_id = ", channel, ")") }
        query.finish(orderBy: "composed_at, session_id, path", limit: filter.limit)
        return try fetch(query, CompositionRecord.init(postgres:))
    }

    public func removeCompositions(sessionID: String, paths: [String]) throws(CatalogError) -> Int {
        guard !paths.isEmpty else { return 0 }
        return try link.withConnection { db in
            try db.changes("DELETE FROM compositions WHERE session_id = \(sessionID) AND path = ANY(\(paths))")
        }
    }
}

extension CompositionRecord {
    static let selectColumns = """
        session_id, path, captions_path, layout, from_ms, duration_ms, width, height, fps, video_codec, audio_codec, senders, bytes, host, composed_at
        """

    init(postgres row: PostgresRow) throws {
        let value = RowReader(row)
        self.init(sessionID: try value("session_id"), path: try value("path"), captionsPath: try value("captions_path"), layout: try value("layout"),
                  fromMs: try value("from_ms"), durationMs: try value("duration_ms"), width: Int(try value("width", as: Int64.self)),
                  height: Int(try value("height", as: Int64.self)), fps: Int(try value("fps", as: Int64.self)), videoCodec: try value("video_codec"),
                  audioCodec: try value("audio_codec"), senders: Int(try value("senders", as: Int64.self)), bytes: try value("bytes"),
                  host: try value("host"), composedAt: try value("composed_at"))
    }

    var postgresColumns: ColumnValues {
        var columns = ColumnValues()
        columns.add("session_id", sessionID)
        columns.add("path", path)
        columns.add("captions_path", captionsPath)
        columns.add("layout", layout)
        columns.add("from_ms", fromMs)
        columns.add("duration_ms", durationMs)
        columns.add("width", Int64(width))
        columns.add("height", Int64(height))
        columns.add("fps", Int64(fps))
        columns.add("video_codec", videoCodec)
        columns.add("audio_codec", audioCodec)
        columns.add("senders", Int64(senders))
        columns.add("bytes", bytes)
        columns.add("host", host)
        columns.add("composed_at", composedAt)
        return columns
    }
}
