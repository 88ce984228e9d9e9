import Archive
import Foundation
import Logging
import SoraSignalingCore
import SystemClock
import Testing
import WireCoding
import TestSupport
@testable import RecBot

/// The catalog queue under an event flood: events are batched into transactions, and what
/// the session reports as stored is exactly what the catalog holds.
@Suite struct CatalogWriterTests {
    @Test func aFloodOfEventsIsStoredOrCountedNeverLostSilently() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-writer-\(UUID())").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: "01JD0000000000000000000000", channelID: "flood", startedAt: 0))
        let writer = CatalogWriter(catalog: catalog, clock: SystemTimeSource(), logger: Logger(label: "test"))
        let clock = ManualTimeSource(wallClockMilliseconds: 1_764_000_000_000)
        let log = SignalingEventLog(sessionID: "01JD0000000000000000000000", writer: writer, logger: Logger(label: "test"), clock: clock)
        let total = 60_000  // more than the queue's 50,000 places, as fast as the caller can go
        for index in 0..<total {
            log.recordDataChannelMessage(label: "#chat", sender: "A", isBinary: false, data: Array("{\"n\":\(index)}".utf8))
        }
        #expect(writer.drain(timeoutSeconds: 120))
        let inCatalog = try catalog.eventCounts(sessionID: "01JD0000000000000000000000").reduce(0) { $0 + $1.count }
        #expect(inCatalog == log.stored, "the report's events_stored is what the catalog holds")
        #expect(log.stored + writer.droppedEvents == total)
        #expect(writer.error == nil)
        // Every event carries the injected clock's time, not the machine's.
        let times = try catalog.events(EventFilter(sessionID: "01JD0000000000000000000000", limit: 10)).map(\.receivedAt)
        #expect(!times.isEmpty && times.allSatisfy { $0 == 1_764_000_000_000 }, "\(times)")
    }

    /// A data-channel message keeps the time it was read, not the time the session stored it:
    /// a chat message and a notify that came over a data channel alike.
    @Test func aMessageKeepsTheTimeItWasRead() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-readtime-\(UUID())").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let session = "01JD0000000000000000000001"
        let catalog = try Catalog(path: root + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(id: session, channelID: "c", startedAt: 0))
        let writer = CatalogWriter(catalog: catalog, clock: SystemTimeSource(), logger: Logger(label: "test"))
        let log = SignalingEventLog(sessionID: session, writer: writer, logger: Logger(label: "test"),
                                    clock: ManualTimeSource(wallClockMilliseconds: 1_764_000_009_000))
        log.store(.dataChannelMessage(label: "#chat", sender: "A", isBinary: false, data: Array("hi".utf8)), receivedAt: 1_764_000_001_000)
        let notify = try IncomingMessage(parsing: #"{"type":"notify","event_type":"connection.created","connection_id":"A"}"#)
        log.store(.message(notify, label: "signaling"), receivedAt: 1_764_000_002_000)
        log.store(.dataChannelMessage(label: "#chat", sender: "A", isBinary: false, data: Array("later".utf8)))
        #expect(writer.drain(timeoutSeconds: 30))
        let times = try catalog.events(EventFilter(sessionID: session, limit: 10)).map(\.receivedAt).sorted()
        #expect(times == [1_764_000_001_000, 1_764_000_002_000, 1_764_000_009_000], "without a read time, the log's clock: \(times)")
    }
}
