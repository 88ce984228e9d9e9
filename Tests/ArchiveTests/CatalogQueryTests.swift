import Foundation
import Testing
@testable import Archive

@Suite struct CatalogQueryTests {
    let catalog: Catalog
    let a = "01JD0000000000000000000001", b = "01JD0000000000000000000002", c = "01JD0000000000000000000003"

    init() throws {
        catalog = try Catalog(path: try temporaryCatalogPath())
        try catalog.insertSession(SessionRecord(id: a, channelID: "lobby", startedAt: 1_000))
        try catalog.insertSession(SessionRecord(id: b, channelID: "lobby", startedAt: 5_000))
        try catalog.insertSession(SessionRecord(id: c, channelID: "studio", startedAt: 9_000))
    }

    @Test func sessionsFilterAndOrder() throws {
        #expect(try catalog.sessions().map(\.id) == [c, b, a])
        #expect(try catalog.sessions(SessionFilter(channelID: "lobby")).map(\.id) == [b, a])
        #expect(try catalog.sessions(SessionFilter(since: 5_000)).map(\.id) == [c, b])
        #expect(try catalog.sessions(SessionFilter(until: 5_000)).map(\.id) == [a])
        #expect(try catalog.sessions(SessionFilter(limit: 1)).map(\.id) == [c])
        #expect(try catalog.session(id: b)?.channelID == "lobby")
        #expect(try catalog.session(id: "01JD0000000000000000000009") == nil)
    }

    @Test func endingASessionRecordsReasonAndStatus() throws {
        try catalog.endSession(id: a, endedAt: 61_000, endReason: "duration-elapsed", exitStatus: 0)
        let session = try #require(try catalog.session(id: a))
        #expect(session.endedAt == 61_000 && session.endReason == "duration-elapsed" && session.exitStatus == 0)
        #expect { try catalog.endSession(id: "01JD0000000000000000000009", endedAt: 1, endReason: "x", exitStatus: 1) } throws: {
            ($0 as? CatalogError)?.reason == .notFound("session 01JD0000000000000000000009")
        }
    }

    @Test func connectionsAreUpsertedPerSession() throws {
        try catalog.upsertConnection(ConnectionRecord(sessionID: a, connectionID: "CONN1", firstSeenAt: 1_000, clientID: "cam", role: "sendonly", metadata: #"{"k":1}"#))
        try catalog.upsertConnection(ConnectionRecord(sessionID: a, connectionID: "CONN1", firstSeenAt: 3_000, leftAt: 4_000))
        try catalog.upsertConnection(ConnectionRecord(sessionID: b, connectionID: "CONN1", firstSeenAt: 6_000))
        let connections = try catalog.connections(sessionID: a)
        #expect(connections.count == 1)
        let connection = try #require(connections.first)
        #expect(connection.firstSeenAt == 1_000 && connection.lastSeenAt == 3_000 && connection.leftAt == 4_000)
        #expect(connection.clientID == "cam" && connection.role == "sendonly" && connection.metadata == #"{"k":1}"#)
        #expect(try catalog.connections(sessionID: b).count == 1)
    }

    @Test func recordingsFilterBySessionConnectionAndChannel() throws {
        var first = try catalog.insertRecording(RecordingRecord(sessionID: a, connectionID: "S1", path: "recordings/\(a)/archive-S1.webm", videoCodec: "VP8", audioCodec: "OPUS", startedAt: 1_100))
        try catalog.insertRecording(RecordingRecord(sessionID: a, connectionID: "S2", path: "recordings/\(a)/archive-S2.webm", videoCodec: "H264", audioCodec: "OPUS", startedAt: 1_200))
        try catalog.insertRecording(RecordingRecord(sessionID: c, connectionID: "S1", path: "recordings/\(c)/archive-S1.webm", videoCodec: nil, audioCodec: "OPUS", startedAt: 9_100))
        first.status = .complete
        first.bytes = 12_345
        first.videoFrames = 300
        try catalog.updateRecording(first)

        #expect(try catalog.recordings().count == 3)
        #expect(try catalog.recordings(RecordingFilter(sessionID: a)).map(\.connectionID) == ["S1", "S2"])
        #expect(try catalog.recordings(RecordingFilter(connectionID: "S1")).map(\.sessionID) == [a, c])
        #expect(try catalog.recordings(RecordingFilter(channelID: "studio")).map(\.sessionID) == [c])
        let stored = try #require(try catalog.recordings(RecordingFilter(sessionID: a)).first)
        #expect(stored.status == .complete && stored.bytes == 12_345 && stored.videoFrames == 300)
        // Two files for the same sender and part are a bug upstream; the schema refuses them.
        #expect(throws: CatalogError.self) {
            try catalog.insertRecording(RecordingRecord(sessionID: a, connectionID: "S1", path: "dup", videoCodec: nil, audioCodec: nil, startedAt: 0))
        }
    }

    @Test func eventsKeepTheirPayloadsExactly() throws {
        let json = #"{"type":"notify","event_type":"connection.created","n":1.50,"u":"\u00e9"}"#
        try catalog.insertEvent(EventRecord(sessionID: a, kind: .notify, eventType: "connection.created", receivedAt: 2_000, payload: .json(json)))
        try catalog.insertEvent(EventRecord(sessionID: a, kind: .push, receivedAt: 2_100, payload: .json(#"{"type":"push","data":[1,2]}"#)))
        try catalog.insertEvent(EventRecord(sessionID: a, kind: .datachannel, label: "#chat", senderConnectionID: "S1", receivedAt: 2_200, payload: .text("hello")))
        try catalog.insertEvent(EventRecord(sessionID: a, kind: .datachannel, label: "#bin", receivedAt: 2_300, payload: .binary([0, 255, 1])))
        try catalog.insertEvent(EventRecord(sessionID: b, kind: .notify, receivedAt: 6_000, payload: .json("{}")))

        let events = try catalog.events(EventFilter(sessionID: a))
        #expect(events.map(\.payload) == [.json(json), .json(#"{"type":"push","data":[1,2]}"#), .text("hello"), .binary([0, 255, 1])])
        #expect(try catalog.events(EventFilter(sessionID: a, kind: .datachannel)).map(\.label) == ["#chat", "#bin"])
        #expect(try catalog.events(EventFilter(sessionID: a, eventType: "connection.created")).count == 1)
        #expect(try catalog.events(EventFilter(sessionID: a, label: "#chat")).first?.senderConnectionID == "S1")
        #expect(try catalog.events(EventFilter(sessionID: a, limit: 2)).count == 2)
        #expect(try catalog.eventCounts(sessionID: a) == [EventCount(kind: .datachannel, count: 2), EventCount(kind: .notify, count: 1), EventCount(kind: .push, count: 1)])
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
