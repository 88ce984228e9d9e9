import Foundation
import Testing
@testable import Archive

/// What the SQLite schema itself refuses (the contract both catalogs keep is in ArchivePostgresTests).
@Suite struct CatalogSchemaTests {
    let catalog: Catalog
    let a = "01JD0000000000000000000001", b = "01JD0000000000000000000002", c = "01JD0000000000000000000003"

    init() throws {
        catalog = try Catalog(path: try temporaryCatalogPath())
        try catalog.insertSession(SessionRecord(id: a, channelID: "lobby", startedAt: 1_000))
        try catalog.insertSession(SessionRecord(id: b, channelID: "lobby", startedAt: 5_000))
        try catalog.insertSession(SessionRecord(id: c, channelID: "studio", startedAt: 9_000))
    }

    @Test func schemaRejectsInconsistentPayloads() throws {
        #expect(throws: CatalogError.self) {
            try catalog.write { db in
                try db.execute(sql: "INSERT INTO events (session_id, kind, received_at, payload_format, payload_text) VALUES (?, 'notify', 1, 'binary', 'x')", arguments: [a])
            }
        }
    }
}

@Suite struct ULIDTests {
    @Test func encodesTimeFirstAndRoundTrips() {
        // The ULID specification's example timestamp.
        let id = ULID(milliseconds: 1_469_918_176_385, randomBytes: Array(repeating: 0, count: 10))
        #expect(id.string == "01ARYZ6S410000000000000000")
        #expect(id.milliseconds == 1_469_918_176_385)
        #expect(ULID(id.string) == id)
        let later = ULID(milliseconds: 1_469_918_176_386, randomBytes: Array(repeating: 0xFF, count: 10))
        #expect(id < later && later.string.hasSuffix("ZZZZZZZZZZZZZZZZ"))
    }

    @Test func rejectsMalformedIDs() {
        for bad in ["", "01ARYZ6S41", "01ARYZ6S410000000000000000X", "01aryz6s410000000000000000", "01ARYZ6S41000000000000000I",
                    "81ARYZ6S410000000000000000", "../../../../etc/passwd00000"] {
            #expect(ULID(bad) == nil, "\(bad)")
        }
    }
}
