import Testing
@testable import RecBot

/// The connection-id rule on the way in: a notify naming a connection id that could lead a
/// path astray keeps its event, but makes no `connections` row (issue 28, finding 10).
struct ConnectionNoticeTests {
    static func notice(_ id: String) -> ConnectionNotice? {
        ConnectionNotice(raw: #"{"type":"notify","event_type":"connection.created","connection_id":"\#(id)","client_id":"c"}"#,
                         sessionID: "01JD0000000000000000000001", at: 5)
    }

    @Test func aSafeIdMakesARow() {
        #expect(Self.notice("01JDS3NDER000000000000000A")?.record.clientID == "c")
    }

    @Test(arguments: ["../../etc", "a/b", "", "a b", String(repeating: "A", count: 65), "\\u0000x"])
    func anUnsafeIdMakesNone(_ id: String) {
        #expect(Self.notice(id) == nil)
    }
}
