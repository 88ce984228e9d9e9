import Testing
import WireCoding
@testable import STUN

@Suite struct RFC5769Tests {
    @Test func sampleRequest() throws {
        let message = try STUNMessage(parsing: RFC5769.sampleRequest)
        #expect(message.method == STUNMethod.binding && message.messageClass == .request)
        #expect(message.transactionID.bytes == RFC5769.transactionID)
        #expect(message.software == RFC5769.sampleRequestSoftware)
        #expect(message.username == RFC5769.sampleRequestUsername)
        #expect(message.priority == 0x6E00_01FF)
        #expect(message.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(message.iceControlling == nil && !message.useCandidate)
        #expect(message.unknownComprehensionRequired.isEmpty)
        #expect(message.hasValidMessageIntegrity(key: Array(RFC5769.shortTermPassword.utf8)))
        #expect(!message.hasValidMessageIntegrity(key: Array("wrong password".utf8)))
        #expect(message.hasValidFingerprint())
    }

    @Test(arguments: [(RFC5769.sampleIPv4Response, RFC5769.mappedIPv4), (RFC5769.sampleIPv6Response, RFC5769.mappedIPv6)])
    func sampleResponses(bytes: [UInt8], address: String) throws {
        let message = try STUNMessage(parsing: bytes)
        #expect(message.messageClass == .successResponse)
        #expect(message.software == RFC5769.responseSoftware)
        let mapped = try #require(message.xorMappedAddress)
        #expect(mapped == TransportAddress(ip: try #require(IPAddress(address)), port: RFC5769.mappedPort))
        #expect(mapped.ip.description == address)
        #expect(message.hasValidMessageIntegrity(key: Array(RFC5769.shortTermPassword.utf8)))
        #expect(message.hasValidFingerprint())
    }

    @Test func sampleRequestWithLongTermCredentials() throws {
        let message = try STUNMessage(parsing: RFC5769.sampleRequestLongTerm)
        #expect(message.username == RFC5769.longTermUsername)
        #expect(message.nonce == RFC5769.longTermNonce && message.realm == RFC5769.longTermRealm)
        let key = STUNIntegrity.longTermKey(username: RFC5769.longTermUsername, realm: RFC5769.longTermRealm,
                                            password: RFC5769.longTermPassword)
        #expect(key == RFC5769.longTermKey)
        #expect(message.hasValidMessageIntegrity(key: key))
        #expect(message.fingerprintOffset == nil && !message.hasValidFingerprint())
    }

    @Test func tamperedVectorsFailTheirChecks() throws {
        var bytes = RFC5769.sampleRequest
        bytes[70] ^= 0x01  // inside USERNAME, covered by both checks
        let message = try STUNMessage(parsing: bytes)
        #expect(!message.hasValidMessageIntegrity(key: Array(RFC5769.shortTermPassword.utf8)))
        #expect(!message.hasValidFingerprint())
    }
}

@Suite struct STUNEncodingTests {
    @Test func encodedBindingRequestRoundTrips() throws {
        var generator = SystemRandomNumberGenerator()
        let id = STUNTransactionID.random(using: &generator)
        let request = STUNMessage(method: STUNMethod.binding, class: .request, transactionID: id, attributes: [
            .username("remote:local"), .priority(0x7E7F_00FF), .iceControlling(42), .useCandidate,
        ])
        let key = Array("a shared ICE password".utf8)
        let bytes = request.encoded(integrityKey: key, fingerprint: true)
        #expect(bytes.count % 4 == 0)
        let parsed = try STUNMessage(parsing: bytes)
        #expect(parsed.transactionID == id && parsed.method == STUNMethod.binding && parsed.messageClass == .request)
        #expect(parsed.username == "remote:local" && parsed.priority == 0x7E7F_00FF && parsed.iceControlling == 42 && parsed.useCandidate)
        #expect(parsed.hasValidMessageIntegrity(key: key) && parsed.hasValidFingerprint())
        #expect(STUNMessage.isProbablySTUN(bytes))
    }

    @Test(arguments: ["192.0.2.1", "127.0.0.1", "::1", "2001:db8::1", "fe80::1:2:3:4"])
    func xorMappedAddressRoundTrips(address: String) throws {
        let id = try #require(STUNTransactionID(bytes: Array(1...12)))
        let transport = TransportAddress(ip: try #require(IPAddress(address)), port: 50_000)
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: id,
                                   attributes: [.xorMappedAddress(transport, transactionID: id)])
        let parsed = try STUNMessage(parsing: response.encoded(integrityKey: [1, 2, 3], fingerprint: true))
        #expect(parsed.xorMappedAddress == transport)
        #expect(parsed.xorMappedAddress?.ip.description == address)
    }

    @Test func errorResponsesCarryCodeAndUnknownAttributes() throws {
        let id = try #require(STUNTransactionID(bytes: Array(repeating: 9, count: 12)))
        let response = STUNMessage(method: STUNMethod.binding, class: .errorResponse, transactionID: id, attributes: [
            .errorCode(420, reason: "Unknown Attribute"), .unknownAttributes([0x0042]),
        ])
        let parsed = try STUNMessage(parsing: response.encoded(fingerprint: true))
        #expect(parsed.messageClass == .errorResponse)
        #expect(parsed.errorCode?.code == 420 && parsed.errorCode?.reason == "Unknown Attribute")
    }
}

@Suite struct STUNHostileInputTests {
    func message(attributes: [(UInt16, [UInt8])]) -> [UInt8] {
        var bytes: [UInt8] = [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + Array(repeating: 7, count: 12)
        for (type, value) in attributes {
            bytes += [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
            bytes += Array(repeating: 0, count: (4 - value.count % 4) % 4)
        }
        let length = bytes.count - 20
        bytes[2] = UInt8(length >> 8)
        bytes[3] = UInt8(length & 0xFF)
        return bytes
    }

    @Test func malformedMessagesAreTypedErrors() {
        let valid = RFC5769.sampleRequest
        #expect(throws: STUNError.tooShort(length: 19)) { try STUNMessage(parsing: Array(valid.prefix(19))) }
        var notSTUN = valid; notSTUN[0] = 0x80
        #expect(throws: STUNError.notSTUN(firstByte: 0x80)) { try STUNMessage(parsing: notSTUN) }
        var cookie = valid; cookie[4] = 0
        #expect(throws: STUNError.badMagicCookie(0x0012_A442)) { try STUNMessage(parsing: cookie) }
        #expect(throws: STUNError.lengthMismatch(header: 0x58, datagram: 104)) { try STUNMessage(parsing: Array(valid.prefix(104))) }
        var odd = valid; odd[3] = 0x57
        #expect(throws: STUNError.lengthNotMultipleOfFour(0x57)) { try STUNMessage(parsing: odd) }
        // An attribute claiming more bytes than the message holds.
        var overrun = message(attributes: [(STUNAttributeType.username, [1, 2, 3, 4])])
        overrun[23] = 200
        #expect(throws: STUNError.attributeOverrun(type: STUNAttributeType.username, offset: 20)) { try STUNMessage(parsing: overrun) }
        // FINGERPRINT must be last.
        #expect(throws: STUNError.fingerprintNotLast(offset: 28)) {
            try STUNMessage(parsing: message(attributes: [(STUNAttributeType.fingerprint, [0, 0, 0, 0]), (STUNAttributeType.software, [65])]))
        }
        #expect(throws: STUNError.malformedAttribute(type: STUNAttributeType.messageIntegrity, reason: "length 4")) {
            try STUNMessage(parsing: message(attributes: [(STUNAttributeType.messageIntegrity, [0, 0, 0, 0])]))
        }
        #expect(throws: STUNError.tooManyAttributes(32)) {
            try STUNMessage(parsing: message(attributes: Array(repeating: (STUNAttributeType.software, [65]), count: 33)))
        }
    }

    @Test func unknownComprehensionRequiredAttributesAreReported() throws {
        let parsed = try STUNMessage(parsing: message(attributes: [(0x0042, [1]), (0x8042, [2]), (STUNAttributeType.priority, [0, 0, 0, 1])]))
        #expect(parsed.unknownComprehensionRequired == [0x0042])
    }

    @Test func attributesAfterMessageIntegrityAreIgnored() throws {
        let parsed = try STUNMessage(parsing: message(attributes: [
            (STUNAttributeType.messageIntegrity, Array(repeating: 0, count: 20)), (STUNAttributeType.username, Array("evil".utf8)),
        ]))
        #expect(parsed.username == nil)
    }

    @Test func malformedTypedAttributesReadAsAbsent() throws {
        let parsed = try STUNMessage(parsing: message(attributes: [
            (STUNAttributeType.priority, [1, 2]), (STUNAttributeType.iceControlling, [1]),
            (STUNAttributeType.xorMappedAddress, [0, 9, 0, 0, 1, 2, 3, 4]), (STUNAttributeType.username, [0xFF, 0xFE]),
        ]))
        #expect(parsed.priority == nil && parsed.iceControlling == nil && parsed.xorMappedAddress == nil && parsed.username == nil)
    }

    @Test func randomDatagramsNeverCrash() {
        var generator = SplitMix64(seed: 0xDEAD_BEEF)
        func next() -> UInt64 { generator.next() }
        for round in 0..<50_000 {
            var bytes = (0..<Int(next() % 96)).map { _ in UInt8(truncatingIfNeeded: next()) }
            if round % 2 == 0 && bytes.count >= 20 {
                bytes[0] &= 0x01; bytes[4] = 0x21; bytes[5] = 0x12; bytes[6] = 0xA4; bytes[7] = 0x42
                bytes[2] = 0; bytes[3] = UInt8((bytes.count - 20) & 0xFC)
            }
            if let message = try? STUNMessage(parsing: bytes) {
                _ = message.hasValidFingerprint()
                _ = message.hasValidMessageIntegrity(key: [1])
                _ = (message.xorMappedAddress, message.errorCode, message.username, message.priority)
            }
        }
    }
}

@Suite struct IPAddressTests {
    @Test func parsesAndPrints() {
        #expect(IPAddress("127.0.0.1")?.bytes == [127, 0, 0, 1])
        #expect(IPAddress("::1")?.description == "::1")
        #expect(IPAddress("2001:0db8:0000:0000:0000:0000:0000:0001")?.description == "2001:db8::1")
        #expect(IPAddress("::")?.description == "::")
        for bad in ["", "1.2.3", "256.1.1.1", "1.2.3.4.5", "01234.1.1.1", "1::2::3", "12345::", ":::", "g::1", "1.2.3.-4"] {
            #expect(IPAddress(bad) == nil, "\(bad)")
        }
    }
}
