import Archive
import Foundation
import TestSupport
import Testing

/// Runs the built `recbot` binary, as an operator or a script would.
struct RecBotBinary {
    static var path: String { builtProduct("recbot") }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
        }
    }

    static func run(_ arguments: [String], environment: [String: String] = [:], executable: String = RecBotBinary.path) throws -> Result {
        var env: [String: String?] = ["RECBOT_DATA_DIR": nil, "TZ": "UTC"]
        for (key, value) in environment { env[key] = value }
        let result = try runProcess(executable, arguments, environment: env)
        return Result(status: result.status, stdout: result.stdoutText, stderr: result.stderrText)
    }
}

/// A data directory with a known catalog: two channels, three sessions, recordings and events.
struct Fixture {
    let directory: String
    let catalog: Catalog
    static let s1 = "01JD2G0000AAAAAAAAAAAAAAAA"  // lobby, ended
    static let s2 = "01JD2H0000BBBBBBBBBBBBBBBB"  // lobby, still open
    static let s3 = "01JD2J0000CCCCCCCCCCCCCCCC"  // studio
    // 2026-11-20T10:00:00Z and later.
    static let t0: Int64 = 1_795_168_800_000

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-cli-\(UUID().uuidString)").path
        catalog = try Catalog(path: directory + "/catalog.sqlite")
        try catalog.insertSession(SessionRecord(
            id: Fixture.s1, channelID: "lobby", startedAt: Fixture.t0, soraSessionID: "SORA1", connectionID: "BOT1",
            clientID: "recbot", signalingURL: "wss://sora.example.com/signaling", recbotVersion: "0.1.0"))
        try catalog.endSession(id: Fixture.s1, endedAt: Fixture.t0 + 65_000, endReason: "duration-elapsed", exitStatus: 0)
        try catalog.insertSession(SessionRecord(id: Fixture.s2, channelID: "lobby", startedAt: Fixture.t0 + 3_600_000))
        try catalog.insertSession(SessionRecord(id: Fixture.s3, channelID: "studio", startedAt: Fixture.t0 + 7_200_000))
        try catalog.endSession(id: Fixture.s3, endedAt: Fixture.t0 + 7_200_000 + 5_000, endReason: "server-disconnect", exitStatus: 69)

        try catalog.upsertConnection(ConnectionRecord(
            sessionID: Fixture.s1, connectionID: "SENDER1", firstSeenAt: Fixture.t0 + 500, clientID: "camera-1", role: "sendonly",
            metadata: #"{"room":"a"}"#))
        var recording = try catalog.insertRecording(RecordingRecord(
            sessionID: Fixture.s1, connectionID: "SENDER1", path: "recordings/\(Fixture.s1)/archive-SENDER1.webm",
            videoCodec: "VP8", audioCodec: "OPUS", startedAt: Fixture.t0 + 600))
        recording.endedAt = Fixture.t0 + 64_600
        recording.durationMs = 64_000
        recording.bytes = 1_572_864
        recording.videoFrames = 1_920
        recording.audioFrames = 3_200
        recording.packetsReceived = 9_000
        recording.packetsRecovered = 430
        recording.packetsLost = 3
        recording.nacksSent = 470
        recording.pliSent = 1
        recording.jitterMs = 4.5
        recording.framesDropped = 2
        recording.framesDroppedIncomplete = 1
        recording.framesDroppedKeyframeWait = 1
        recording.videoSizes = "640x360,1280x720"
        recording.status = .complete
        try catalog.updateRecording(recording)
        try catalog.insertRecording(RecordingRecord(
            sessionID: Fixture.s3, connectionID: "SENDER9", path: "recordings/\(Fixture.s3)/archive-SENDER9.webm",
            videoCodec: "H264", audioCodec: "OPUS", startedAt: Fixture.t0 + 7_200_100))

        try catalog.insertEvent(EventRecord(
            sessionID: Fixture.s1, kind: .notify, eventType: "connection.created", receivedAt: Fixture.t0 + 500,
            payload: .json(#"{"type":"notify","event_type":"connection.created","connection_id":"SENDER1","n":[1,2.5,null]}"#)))
        try catalog.insertEvent(EventRecord(
            sessionID: Fixture.s1, kind: .push, receivedAt: Fixture.t0 + 700, payload: .json(#"{"type":"push","data":{"x":"y"}}"#)))
        try catalog.insertEvent(EventRecord(
            sessionID: Fixture.s1, kind: .datachannel, label: "#chat", senderConnectionID: "SENDER1", receivedAt: Fixture.t0 + 800,
            payload: .binary(Array("hi there".utf8))))
        try catalog.insertEvent(EventRecord(
            sessionID: Fixture.s1, kind: .datachannel, label: "#raw", receivedAt: Fixture.t0 + 900, payload: .binary([0xFF, 0x00, 0x80])))
        try catalog.insertEvent(EventRecord(
            sessionID: Fixture.s1, kind: .datachannel, label: "#chat", receivedAt: Fixture.t0 + 1_000, payload: .text("not json")))
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> RecBotBinary.Result {
        try RecBotBinary.run(arguments + ["--data-dir", directory], environment: environment)
    }

    func jsonArray(_ arguments: [String]) throws -> [[String: Any]] {
        let result = try run(arguments + ["--json"])
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return try #require(try result.json() as? [[String: Any]])
    }
}
