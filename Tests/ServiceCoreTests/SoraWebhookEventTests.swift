import Foundation
import ServiceCore
import Testing

/// Sora's webhooks as `recbot serve` reads them: bodies shaped like Sora's (field names from
/// Sora's server SDKs), every known type without its ids refused, every unknown type ignored.
@Suite struct SoraWebhookEventTests {
    static let created = #"""
        {"type":"session.created","id":"W1","timestamp":"2026-12-01T00:00:00.000000Z","version":"2025.1.0",
         "label":"WebRTC SFU Sora","node_name":"sora@127.0.0.1","channel_id":"meet-1","session_id":"ABCDEFGHIJKLMNOPQRSTUVWXYZ",
         "multistream":true,"spotlight":false,"created_time":1764547200,"created_timestamp":"2026-12-01T00:00:00.000000Z"}
        """#

    func parse(_ text: String) throws(SoraWebhookError) -> SoraWebhookEvent { try SoraWebhookEvent(body: Array(text.utf8)) }

    @Test func sessionWebhooksGiveTheChannelAndSession() throws {
        #expect(try parse(Self.created) == .sessionCreated(SoraSessionInfo(channelID: "meet-1", sessionID: "ABCDEFGHIJKLMNOPQRSTUVWXYZ")))
        let destroyed = #"{"type":"session.destroyed","channel_id":"meet-1","session_id":"S","session_metadata":{"b":1,"a":"x"},"connections":[]}"#
        #expect(try parse(destroyed) == .sessionDestroyed(SoraSessionInfo(channelID: "meet-1", sessionID: "S", metadata: #"{"a":"x","b":1}"#)))
    }

    @Test func connectionWebhooksGiveTheConnection() throws {
        let created = #"{"type":"connection.created","role":"sendrecv","channel_id":"c","session_id":"S","connection_id":"K","data":{"minutes":0}}"#
        guard case .connectionCreated(let info) = try parse(created) else { Issue.record("not a connection.created"); return }
        #expect(info.connectionID == "K" && info.role == "sendrecv" && info.sessionID == "S")
        #expect(try parse(#"{"type":"connection.destroyed","channel_id":"c","session_id":"S","connection_id":"K"}"#) != .ignored(type: "x"))
    }

    @Test func unknownTypesAreIgnoredNotRefused() throws {
        #expect(try parse(#"{"type":"audio-streaming.started","channel_id":"c"}"#) == .ignored(type: "audio-streaming.started"))
        #expect(try parse(#"{"type":"session.vanished"}"#) == .ignored(type: "session.vanished"))
    }

    @Test(arguments: [
        (#"{"type":"session.created","session_id":"S"}"#, SoraWebhookError.missing("channel_id")),
        (#"{"type":"session.created","channel_id":"c","session_id":7}"#, .missing("session_id")),
        (#"{"type":"session.created","channel_id":"a\u0000b","session_id":"S"}"#, .invalid("channel_id")),
        (#"{"channel_id":"c"}"#, .missing("type")),
        (#"[1,2]"#, .notAnObject),
        (#"{"type":"#, .notJSON),
        ("", .notJSON),
    ])
    func malformedBodiesAreRefusedWithTheReason(body: String, error: SoraWebhookError) {
        #expect(throws: error) { try parse(body) }
    }

    @Test func oversizedBodiesAndIdsAreRefused() {
        let big = [UInt8](repeating: 0x20, count: SoraWebhookEvent.maximumBodyBytes + 1)
        #expect(throws: SoraWebhookError.tooLarge(big.count)) { try SoraWebhookEvent(body: big) }
        let longID = String(repeating: "x", count: 256)
        #expect(throws: SoraWebhookError.invalid("channel_id")) { try parse(#"{"type":"session.created","channel_id":"\#(longID)","session_id":"S"}"#) }
    }

    @Test func deeplyNestedJSONIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: SoraWebhookError.self) { try parse(#"{"type":"session.created","x":\#(deep)}"#) }
    }
}

@Suite struct RequestAuthenticationTests {
    let headers: [(name: String, value: String)] = [("content-type", "application/json")]

    @Test func aSharedSecretHeaderIsCheckedExactly() {
        let auth = RequestAuthentication([.header(name: "x-recbot-secret", secret: "s3cret")])
        #expect(auth.accepts(headers: headers + [("X-Recbot-Secret", "s3cret")]))
        #expect(!auth.accepts(headers: headers + [("x-recbot-secret", "s3cre")]))
        #expect(!auth.accepts(headers: headers + [("x-recbot-secret", "s3cret ")]))
        #expect(!auth.accepts(headers: headers))
    }

    @Test func basicAndBearer() {
        let auth = RequestAuthentication([.basic(user: "sora", password: "pw"), .bearer(token: "T0K")])
        #expect(auth.accepts(headers: [("Authorization", "Basic " + Data("sora:pw".utf8).base64EncodedString())]))
        #expect(!auth.accepts(headers: [("Authorization", "Basic " + Data("sora:px".utf8).base64EncodedString())]))
        #expect(auth.accepts(headers: [("authorization", "Bearer T0K")]))
        #expect(!auth.accepts(headers: [("authorization", "Bearer T0")]))
        #expect(!RequestAuthentication([]).accepts(headers: [("authorization", "Bearer T0K")]), "nothing configured lets nothing in")
    }
}
