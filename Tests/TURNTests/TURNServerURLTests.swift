import Testing
import STUN
@testable import TURN

@Suite struct TURNServerURLTests {
    @Test func parsesWhatRFC7065AndSoraSend() throws {
        #expect(try TURNServerURL(parsing: "turn:turn.example.com") == TURNServerURL(host: "turn.example.com", port: 3478, transport: .udp))
        #expect(try TURNServerURL(parsing: "turn:192.0.2.1:3479?transport=tcp") == TURNServerURL(host: "192.0.2.1", port: 3479, transport: .tcp))
        #expect(try TURNServerURL(parsing: "TURNS:turn.example.com?transport=TCP") == TURNServerURL(host: "turn.example.com", port: 5349, transport: .tls))
        #expect(try TURNServerURL(parsing: "turn:[2001:db8::1]:3478?transport=udp") == TURNServerURL(host: "2001:db8::1", port: 3478, transport: .udp))
        #expect(try TURNServerURL(parsing: "turns:[::1]").description == "turns:[::1]:5349?transport=tcp")
    }

    @Test func refusesWhatItCannotUse() {
        #expect(throws: TURNServerURL.ParseError.notTURN("stun:a")) { try TURNServerURL(parsing: "stun:a") }
        for bad in ["turn:", "turn:host:0", "turn:host:70000", "turns:host?transport=udp", "turn:host?transport=sctp",
                    "turn:2001:db8::1", "turn:[::1", "turn:host?foo=bar", "turn:ho st", "turn:user@host"] {
            #expect(throws: TURNServerURL.ParseError.self, "\(bad)") { try TURNServerURL(parsing: bad) }
        }
    }
}

@Suite struct TURNCredentialsTests {
    @Test func noDescriptionShowsThePassword() {
        var configuration = TURNClientConfiguration(server: .init(ip: .v4(127, 0, 0, 1), port: 3478), transport: .udp,
                                                    credentials: TURNCredentials(username: "u", password: "s3cret"))
        configuration.software = "x"
        for text in [String(describing: configuration), String(reflecting: configuration), "\(configuration.credentials)"] {
            #expect(!text.contains("s3cret"), "\(text)")
        }
    }
}
