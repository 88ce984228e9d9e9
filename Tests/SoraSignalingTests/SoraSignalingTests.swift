import Foundation
import Testing
@testable import SoraSignalingCore

@Suite struct DataChannelPayloadTests {
    @Test func compressedMessagesWithSenderHeader() throws {
        let settings = SoraDataChannelSettings(label: "#chat", compress: true, senderConnectionIDHeader: true)
        let sender = "8C2R4W6Y0TQ1H3J5K7M9N0PBSD"
        let raw = Zlib.deflate(Array((sender + "{\"text\":\"こんにちは\"}").utf8))
        let message = try SoraDataChannelMessage(raw: raw, settings: settings, maximumSize: 65_536)
        #expect(message.senderConnectionID == sender)
        #expect(String(decoding: message.data, as: UTF8.self) == "{\"text\":\"こんにちは\"}")
    }

    @Test func zlibBombsAndGarbageAreRefused() {
        let bomb = Zlib.deflate([UInt8](repeating: 0, count: 10 << 20))  // 10 MiB of zeros, about 10 KiB compressed
        #expect(bomb.count < 20_000)
        #expect(throws: DataChannelPayloadError.tooLarge(limit: 262_144)) { try Zlib.inflate(bomb, limit: 262_144) }
        #expect(throws: DataChannelPayloadError.self) { try Zlib.inflate([0x78, 0x9C, 1, 2, 3], limit: 1_000) }
        #expect(throws: DataChannelPayloadError.self) { try Zlib.inflate(Array(Zlib.deflate(Array("hello".utf8)).dropLast(3)), limit: 1_000) }
        #expect(throws: DataChannelPayloadError.missingHeader) {
            try SoraDataChannelMessage(raw: Array("short".utf8), settings: SoraDataChannelSettings(label: "#x", compress: false, senderConnectionIDHeader: true),
                                       maximumSize: 100)
        }
    }

    @Test func offerListsDataChannelSettings() throws {
        let text = ##"{"type":"offer","sdp":"v=0","data_channels":[{"label":"signaling","direction":"sendrecv","compress":false},{"label":"#chat","direction":"recvonly","compress":true,"header":[{"type":"sender_connection_id"}]}],"data_channel_signaling":true,"ignore_disconnect_websocket":true}"##
        guard case .offer(let offer) = try IncomingMessage(parsing: text) else { Issue.record("not an offer"); return }
        #expect(offer.dataChannels == [SoraDataChannelSettings(label: "signaling", compress: false, senderConnectionIDHeader: false),
                                       SoraDataChannelSettings(label: "#chat", compress: true, senderConnectionIDHeader: true)])
        #expect(offer.dataChannelSignaling == true && offer.ignoreDisconnectWebsocket == true)
    }

    @Test func connectCarriesDataChannelOptions() throws {
        var options = ConnectOptions(channelID: "room", soraClient: "recbot test", environment: "test")
        options.dataChannelSignaling = true
        options.ignoreDisconnectWebsocket = true
        options.dataChannelsJSON = ##"[{"label":"#chat","direction":"recvonly","header":[{"type":"sender_connection_id"}]}]"##
        let object = try #require(try JSONSerialization.jsonObject(with: Data(options.connectMessage().utf8)) as? [String: Any])
        #expect(object["data_channel_signaling"] as? Bool == true && object["ignore_disconnect_websocket"] as? Bool == true)
        #expect((object["data_channels"] as? [[String: Any]])?.first?["label"] as? String == "#chat")
        #expect(object["role"] as? String == "recvonly" && object["channel_id"] as? String == "room")
    }

    @Test func signalingMessagesAreUntrustedInput() throws {
        for bad in ["", "[]", "{}", "{\"type\": 1}", "{\"type\":\"offer\"}", "{\"type\":\"redirect\"}", String(repeating: "x", count: 100)] {
            #expect(throws: SignalingError.self) { try IncomingMessage(parsing: bad) }
        }
        #expect(try IncomingMessage(parsing: #"{"type":"whatever","x":1}"#) == .other(type: "whatever", raw: #"{"type":"whatever","x":1}"#))
    }
}
