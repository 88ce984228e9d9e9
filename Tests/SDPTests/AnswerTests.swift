import DTLS
import Foundation
import ICE
import Keying
import Testing
import WireCoding
@testable import SDP

let localFingerprint = DTLSFingerprint(algorithm: "sha-256", bytes: Array(0..<32))!
let local = LocalTransportParameters(iceUfrag: "rbUF", icePwd: "recbotpassword12345678", fingerprint: localFingerprint,
                                     candidates: [ICECandidate(foundation: "1", priority: 2_130_706_431, address: "127.0.0.1", port: 50_000, kind: .host)],
                                     endOfCandidates: true, sessionID: "42")

@Suite struct AnswerTests {
    @Test func answersTheRealAiortcOffer() throws {
        let offer = try SessionDescription(parsing: OfferFixtures.aiortc)
        #expect(offer.media.count == 2 && offer.bundleGroups == [["0", "1"]])
        let answer = try RecvOnlyAnswerBuilder.answer(to: offer, local: local)

        #expect(answer.remote.iceUfrag == "hmE2" && answer.remote.icePwd == "Dlgb5lt0BpPhol0fOm3QDO" && !answer.remote.iceLite)
        #expect(answer.remote.fingerprints.map(\.algorithm) == ["sha-256", "sha-384", "sha-512"])
        #expect(answer.remote.candidates.count == 1 && answer.remote.candidates[0].address == "127.0.0.1" && answer.remote.endOfCandidates)

        let video = answer.media[0]
        #expect(video.accepted && video.kind == .video && video.mid == "0")
        #expect(video.codecs.map(\.name) == ["VP8"] && video.codecs[0].payloadType == 97 && video.codecs[0].rtxPayloadType == 98)
        #expect(video.rtxSSRCs == [2_092_067_786: 3_786_555_696])
        #expect(video.headerExtensions == [HeaderExtensionMap(id: 1, uri: ReceiverCapabilities.midExtension)])
        #expect(video.msidStream == "4f677f3b-8e1d-43c5-9d4c-35225866d705")
        let audio = answer.media[1]
        #expect(audio.accepted && audio.codecs.map(\.name) == ["OPUS"] && audio.codecs[0].channels == 2)

        // The answer text, re-parsed.
        let text = answer.sdp.serialized
        #expect(text.hasPrefix("v=0\r\n") && text.hasSuffix("\r\n") && !text.contains("\n\n"))
        let reparsed = try SessionDescription(parsing: text)
        #expect(reparsed.bundleGroups == [["0", "1"]])
        #expect(reparsed.media.map(\.mid) == ["0", "1"] && reparsed.media.allSatisfy { $0.port == 9 })
        for section in reparsed.media {
            #expect(section.direction == .recvonly)
            #expect(section.attribute(named: "setup")?.value == "active")
            #expect(section.attribute(named: "fingerprint")?.value == localFingerprint.sdp)
            #expect(section.attribute(named: "ice-ufrag")?.value == "rbUF" && section.has("rtcp-mux"))
            #expect(section.attributes(named: "rtcp-fb").isEmpty, "no feedback is implemented yet")
            #expect(!section.headerExtensions.contains { $0.uri.contains("abs-send-time") || $0.uri.contains("audio-level") })
        }
        #expect(reparsed.media[0].formats == ["97", "98"])
        #expect(reparsed.media[0].attributes(named: "candidate").count == 1 && reparsed.media[0].has("end-of-candidates"))
        #expect(reparsed.media[1].attributes(named: "candidate").isEmpty)
    }

    @Test func answersASoraStyleOffer() throws {
        var capabilities = ReceiverCapabilities()
        capabilities.rtcpFeedback = ["nack", "nack pli"]
        let offer = try SessionDescription(parsing: OfferFixtures.soraStyle)
        let answer = try RecvOnlyAnswerBuilder.answer(to: offer, local: local, capabilities: capabilities)
        #expect(answer.remote.iceLite)
        #expect(answer.remote.candidates.map(\.transport) == ["udp", "tcp"])

        #expect(!answer.media[0].accepted && answer.media[0].rejectionReason == "data channels are not enabled")
        let audio = answer.media[1]
        #expect(audio.accepted && audio.codecs.map(\.payloadType) == [111])
        #expect(audio.codecs[0].formatParameters == "minptime=10;useinbandfec=1")
        #expect(audio.msidStream == "5Q7GHZK3V1N8E2M4R6T0W9XACB")
        let video = answer.media[2]
        #expect(video.codecs.map(\.name) == ["VP8", "VP9", "AV1", "H264"], "H.264 mode 2, H.265 and FEC dropped")
        #expect(video.codecs.map(\.rtxPayloadType) == [97, nil, nil, 101])
        #expect(video.codecs[0].rtcpFeedback == ["nack", "nack pli"])
        #expect(video.codecs[3].formatParameters == "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f")
        #expect(Set(video.headerExtensions.map(\.id)) == [1, 10, 11])
        #expect(!answer.media[3].accepted, "released by the offerer")
        #expect(!answer.media[4].accepted && answer.media[4].rejectionReason?.contains("H265") == true)
        #expect(answer.media[4].refusedCodecs == ["H265"], "refused for its codec, named for the catalog")
        #expect(answer.media[3].refusedCodecs.isEmpty && answer.media[2].refusedCodecs.isEmpty)
        #expect(answer.media[5].accepted && answer.media[5].msidStream == "8C2R4W6Y0TQ1H3J5K7M9N0PBSD")

        let reparsed = try SessionDescription(parsing: answer.sdp.serialized)
        #expect(reparsed.media.map(\.port) == [0, 9, 9, 0, 0, 9])
        #expect(reparsed.media.map(\.mid) == ["0", "1", "2", "3", "4", "5"])
        #expect(reparsed.bundleGroups == [["1", "2", "5"]])
        #expect(reparsed.media[2].formats == ["96", "97", "98", "99", "100", "101"])
        #expect(reparsed.media[2].rtcpFeedback(96) == ["nack", "nack pli"])
        #expect(reparsed.media[2].formatParameters(101) == "apt=100")
        #expect(reparsed.media[1].attributes(named: "candidate").count == 1, "candidates go in the first accepted section")
    }

    @Test func acceptsTheDataChannelSectionWhenEnabled() throws {
        var capabilities = ReceiverCapabilities()
        capabilities.acceptsDataChannels = true
        let answer = try RecvOnlyAnswerBuilder.answer(to: try SessionDescription(parsing: OfferFixtures.soraStyle), local: local,
                                                      capabilities: capabilities)
        #expect(answer.media[0].accepted && answer.media[0].sctpPort == 5000 && answer.media[0].maxMessageSize == 262_144)
        let section = try SessionDescription(parsing: answer.sdp.serialized).media[0]
        #expect(section.port == 9 && section.formats == ["webrtc-datachannel"] && section.sctpPort == 5000)
    }
}

@Suite struct UnanswerableOfferTests {
    func answer(_ edit: (inout [String]) -> Void) throws -> RecvOnlyAnswer {
        var lines = OfferFixtures.aiortc.components(separatedBy: "\r\n")
        edit(&lines)
        return try RecvOnlyAnswerBuilder.answer(to: try SessionDescription(parsing: lines.joined(separator: "\r\n")), local: local)
    }

    func lineNumber(of prefix: String) -> Int {
        (OfferFixtures.aiortc.components(separatedBy: "\r\n").firstIndex { $0.hasPrefix(prefix) } ?? -1) + 1
    }

    @Test func missingFingerprintNamesTheSection() {
        #expect(throws: SDPError.missing("a=fingerprint", line: lineNumber(of: "m=video"))) {
            try answer { $0.removeAll { $0.hasPrefix("a=fingerprint") } }
        }
    }

    @Test func badFingerprintNamesTheLine() {
        let line = lineNumber(of: "a=fingerprint:sha-256")
        #expect { try answer { $0[line - 1] = "a=fingerprint:md5 00:11" } } throws: { error in
            if case .malformedLine(let at, _, _) = error as? SDPError { return at == line }
            return false
        }
    }

    @Test func activeSetupIsRefused() {
        let line = lineNumber(of: "a=setup:actpass")
        #expect(throws: SDPError.unsupportedOffer(line: line, reason: "a=setup:active would make recbot the DTLS server")) {
            try answer { $0[line - 1] = "a=setup:active" }
        }
    }

    @Test func missingRTCPMuxIsRefused() {
        #expect(throws: SDPError.unsupportedOffer(line: lineNumber(of: "m=video"), reason: "m-section without a=rtcp-mux (recbot multiplexes RTP and RTCP)")) {
            try answer { $0.removeAll { $0 == "a=rtcp-mux" } }
        }
    }

    @Test func invalidICECredentialsAreRefused() {
        let line = lineNumber(of: "a=ice-pwd")
        #expect(throws: SDPError.unsupportedOffer(line: line, reason: "invalid ice-pwd")) {
            try answer { $0[line - 1] = "a=ice-pwd:short" }
        }
        #expect(throws: SDPError.missing("a=ice-ufrag", line: lineNumber(of: "m=video"))) {
            try answer { $0.removeAll { $0.hasPrefix("a=ice-ufrag") } }
        }
    }

    @Test func duplicateOrMissingMidsAreRefused() {
        let line = lineNumber(of: "a=mid:1")
        #expect(throws: SDPError.unsupportedOffer(line: line, reason: "empty, over-long or duplicate mid '0'")) {
            try answer { $0[line - 1] = "a=mid:0" }
        }
        #expect(throws: SDPError.missing("a=mid", line: lineNumber(of: "m=audio"))) {
            try answer { $0.remove(at: line - 1) }
        }
    }

    @Test func sectionOutsideBundleIsRejectedNotFatal() throws {
        let result = try answer { lines in
            let index = lines.firstIndex { $0.hasPrefix("a=group:BUNDLE") }!
            lines[index] = "a=group:BUNDLE 0"
        }
        #expect(result.media[0].accepted && !result.media[1].accepted)
    }
}

@Suite struct SDPParserTests {
    @Test func malformedTextNamesTheLine() {
        #expect(throws: SDPError.malformedLine(line: 1, text: "v=1", reason: "SDP must start with v=0")) { try SessionDescription(parsing: "v=1\r\n") }
        #expect(throws: SDPError.malformedLine(line: 3, text: "garbage", reason: "expected <type>=<value>")) {
            try SessionDescription(parsing: "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ngarbage\r\n")
        }
        #expect(throws: SDPError.malformedLine(line: 3, text: "m=video x UDP/TLS/RTP/SAVPF 96", reason: "bad port 'x'")) {
            try SessionDescription(parsing: "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nm=video x UDP/TLS/RTP/SAVPF 96\r\n")
        }
        #expect(throws: SDPError.malformedLine(line: 2, text: "o=- 1", reason: "o= needs 6 fields")) { try SessionDescription(parsing: "v=0\no=- 1\n") }
        #expect(throws: SDPError.missing("o= line", line: nil)) { try SessionDescription(parsing: "v=0\r\ns=-\r\n") }
        #expect(throws: SDPError.missing("v=0", line: nil)) { try SessionDescription(parsing: "") }
    }

    /// Bounded, yet large enough for a channel of 1,000 publishers (two sections each).
    @Test func oversizedInputIsRefused() {
        let huge = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n" + String(repeating: "a=x\r\n", count: 900_000)
        #expect(throws: SDPError.self) { try SessionDescription(parsing: huge) }
        let manyLines = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n" + String(repeating: "a=x\r\n", count: 160_001)
        #expect(throws: SDPError.tooLarge(reason: "more than 160000 lines")) { try SessionDescription(parsing: manyLines) }
        let manySections = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\n" + String(repeating: "m=audio 9 RTP/AVP 0\r\n", count: 4_097)
        #expect(throws: SDPError.tooLarge(reason: "more than 4096 media sections")) { try SessionDescription(parsing: manySections) }
    }

    /// Issue 12: an fmtp pair that is a bare "=" indexed an empty split, on the H.264 and RTX paths.
    @Test func aBareEqualsInFmtpIsIgnored() throws {
        for (maps, fmtp) in [("a=rtpmap:96 H264/90000", "a=fmtp:96 ="), ("a=rtpmap:96 VP8/90000\r\na=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96;=")] {
            let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96 97\r\na=mid:0\r\n\(maps)\r\n\(fmtp)\r\n"
            let section = try #require(try SessionDescription(parsing: text).media.first)
            _ = RecvOnlyAnswerBuilder.negotiate(section, index: 0, capabilities: ReceiverCapabilities())
        }
        #expect(RecvOnlyAnswerBuilder.formatParameterDictionary("=;apt=96") == ["apt": "96"])
    }

    /// Issue 12's findings: attributes whose value splits into nothing used to index an empty array.
    @Test func attributesThatSplitIntoNothingAreSkipped() throws {
        let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ssrc:1 :\r\na=extmap:/ x\r\na=ssrc:2 cname:x\r\na=extmap:3 urn:y\r\n"
        let section = try #require(try SessionDescription(parsing: text).media.first)
        #expect(section.ssrcAttributes.map(\.ssrc) == [2])
        #expect(section.headerExtensions.map(\.id) == [3])
    }

    @Test func simulcastAndRidsParse() throws {
        let text = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rid:r0 send\r\na=rid:r1 send\r\na=simulcast:send r0;~r1,r2\r\n"
        let section = try #require(try SessionDescription(parsing: text).media.first)
        #expect(section.rids.map(\.id) == ["r0", "r1"])
        let simulcast = try #require(section.simulcast)
        #expect(simulcast.direction == "send" && simulcast.streams == [["r0"], ["r1", "r2"]])
    }

    @Test func candidatesParseAndPrint() throws {
        let text = "candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.1 rport 46154 generation 0 network-cost 999"
        let candidate = try #require(ICECandidate(sdp: "a=" + text))
        #expect(candidate.kind == .srflx && candidate.port == 46_154 && candidate.relatedAddress == "10.0.0.1")
        #expect(candidate.extensions == ["generation": "0", "network-cost": "999"])
        #expect(ICECandidate(sdp: candidate.sdp) == candidate)
        for bad in ["", "candidate:1 1 udp x 1.2.3.4 5 typ host", "candidate:1 1 udp 1 1.2.3.4 70000 typ host",
                    "candidate:1 1 udp 1 1.2.3.4 5 type host", "candidate:1 1 udp 1 1.2.3.4 5 typ bogus", "candidate:1 0 udp 1 1.2.3.4 5 typ host"] {
            #expect(ICECandidate(sdp: bad) == nil, "\(bad)")
        }
    }

    @Test func fingerprintsValidateTheirLength() {
        #expect(DTLSFingerprint(sdp: "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")) != nil)
        #expect(DTLSFingerprint(sdp: "sha-256 " + Array(repeating: "AB", count: 31).joined(separator: ":")) == nil)
        #expect(DTLSFingerprint(sdp: "SHA-1 " + Array(repeating: "0f", count: 20).joined(separator: ":"))?.algorithm == "sha-1")
        #expect(DTLSFingerprint(sdp: "md5 " + Array(repeating: "00", count: 16).joined(separator: ":")) == nil)
        #expect(DTLSFingerprint(sdp: "sha-256 ZZ") == nil)
    }

    @Test func randomInputNeverCrashes() {
        var generator = SplitMix64(seed: 0x5DB)
        func next() -> UInt64 { generator.next() }
        let source = Array(OfferFixtures.soraStyle.utf8)
        for _ in 0..<3_000 {
            var bytes = source
            for _ in 0..<Int(next() % 12) { bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next()) }
            let cut = Int(next() % UInt64(bytes.count))
            let text = String(decoding: bytes[0..<cut], as: UTF8.self)
            if let offer = try? SessionDescription(parsing: text) {
                _ = try? RecvOnlyAnswerBuilder.answer(to: offer, local: local)
            }
        }
    }
}
