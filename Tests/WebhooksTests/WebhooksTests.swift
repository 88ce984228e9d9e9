import DiskLayout
import Foundation
import Recorder
import RecordingEvents
import Testing
@testable import Webhooks

@Suite struct WebhookSignatureTests {
    /// RFC 4231 test case 2: HMAC-SHA256 with key "Jefe".
    @Test func matchesTheRFC4231Vector() {
        let value = WebhookSignature.value(body: Array("what do ya want for nothing?".utf8), secret: Array("Jefe".utf8))
        #expect(value == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }
}

@Suite struct RetryScheduleTests {
    @Test func backsOffExponentiallyWithJitterUpToTenMinutes() {
        #expect(RetrySchedule.delayMilliseconds(afterAttempt: 1, unit: 0) == 500)
        #expect(RetrySchedule.delayMilliseconds(afterAttempt: 1, unit: 0.999_999) == 999)
        #expect(RetrySchedule.delayMilliseconds(afterAttempt: 4, unit: 0) == 4_000)
        #expect(RetrySchedule.delayMilliseconds(afterAttempt: 11, unit: 0.999_999) == 599_999)
        #expect(RetrySchedule.delayMilliseconds(afterAttempt: 1_000, unit: 0.5) == 450_000, "no overflow, capped")
        let spread = Set((0..<100).map { RetrySchedule.delayMilliseconds(afterAttempt: 6, unit: Double($0) / 100) })
        #expect(spread.count > 50 && spread.allSatisfy { (16_000...32_000).contains($0) }, "jittered within the upper half")
    }
}

@Suite struct SoraEventsTests {
    let context: SidecarContext = {
        var context = SidecarContext(recordingID: "01JD0000000000000000000000", channelID: "sora", soraSessionID: "SORASESSION",
                                     clientIDs: ["PUB": "client-1"], botConnectionID: "BOT", recbotVersion: "1.2.3")
        context.splitDurationSeconds = 10
        context.recordingMetadata = #"{"k":1}"#
        return context
    }()
    let events = SoraEvents(nodeName: "host-a", version: "1.2.3")

    func object(_ event: WebhookEvent) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(event.body.utf8)) as? [String: Any])
    }

    /// Sora's envelope and field names, so an existing receiver reads them unchanged.
    @Test func archiveStartedHasSorasEnvelopeAndFields() throws {
        let event = events.archiveStarted(context: context, connectionID: "PUB", tracks: SenderTracks(videoCodec: .vp8, audioChannels: 2),
                                          filename: "split-archive-PUB_0001.webm", fileStartMilliseconds: 1_700_000_001_000,
                                          startOffsetSeconds: 1, now: 1_700_000_001_500)
        let body = try object(event)
        #expect(body["type"] as? String == "archive.started" && body["id"] as? String == event.eventID && event.eventID.count == 26)
        #expect(body["channel_id"] as? String == "sora" && body["session_id"] as? String == "SORASESSION" && body["connection_id"] as? String == "PUB")
        #expect(body["client_id"] as? String == "client-1" && body["node_name"] as? String == "host-a" && body["timestamp"] as? String == "2023-11-14T22:13:21.500Z")
        let data = try #require(body["data"] as? [String: Any])
        #expect(data["recording_id"] as? String == "01JD0000000000000000000000" && data["audio"] as? Bool == true && data["video_codec_type"] as? String == "VP8")
        #expect(data["start_time_offset"] as? Int == 1 && data["start_time"] as? Int == 1_700_000_001 && data["created_at"] as? Int == 1_700_000_001)
        #expect(event.rows(settings: WebhookSettings(urls: ["http://a/", "http://b/"]), now: 5).map(\.url) == ["http://a/", "http://b/"])
        #expect(event.rows(settings: WebhookSettings(urls: ["http://a/"]), now: 5).first?.expiresAt == Int64(86_400_005))
    }

    @Test func recordingStartedCarriesTheSplitAndTheMetadata() throws {
        let data = try #require(try object(events.recordingStarted(context: context, startedAt: 1_000, now: 2_000))["data"] as? [String: Any])
        #expect(data["split_duration"] as? Int == 10 && data["split_only"] as? Bool == false && (data["recording_metadata"] as? [String: Any])?["k"] as? Int == 1)
    }

    @Test func uploaderEventsAreFlatAndUseTheirOwnTypeHeader() throws {
        let event = WebhookEvent(uploaded: "archive.uploaded", sessionID: "S", fields: ["filename": "archive-PUB.webm", "file_url": "s3://b/k"],
                                 timestampMilliseconds: 0)
        let body = try object(event)
        #expect(body["type"] as? String == "archive.uploaded" && body["file_url"] as? String == "s3://b/k" && body["data"] == nil)
        #expect(WebhookEvent.typeHeader(for: "archive.uploaded") == "sora-archive-uploader-webhook-type")
        #expect(WebhookEvent.typeHeader(for: "archive.available") == "sora-event-webhook-type")
    }
}
