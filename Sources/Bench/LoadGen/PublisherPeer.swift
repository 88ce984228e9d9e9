import DTLS
import Keying
import RTP
import SDP
import SRTP
import STUN
import WireCoding

/// What the recorder sent back, per kind.
public struct FeedbackCounts: Sendable, Codable, Equatable {
    public var bindingRequests = 0
    public var bindingRequestsRefused = 0
    public var receiverReports = 0
    public var nacks = 0
    public var nackedPackets = 0
    public var pictureLossIndications = 0
    public var fullIntraRequests = 0
    public var rtcpUndecryptable = 0
}

/// The load generator's side of one recorder's connection, sans-IO: ICE-lite (answers binding
/// requests that carry the right credentials), the DTLS server, and SRTP. Datagrams go in;
/// datagrams to send back and the recorder's feedback (keyframe requests, NACKs) come out.
/// `Address` is the caller's socket address type.
public final class PublisherPeer<Address: Hashable> {
    public enum Feedback: Equatable {
        case keyframeRequest(mediaSSRC: UInt32)
        case nack(mediaSSRC: UInt32, sequenceNumbers: [UInt16])
    }

    public struct Output {
        public var datagrams: [[UInt8]] = []
        public var feedback: [Feedback] = []
        public var failure: String?
    }

    public let localUfrag: String
    public let localPassword: String
    public let certificate: DTLSCertificate
    public private(set) var counts = FeedbackCounts()
    /// Where media goes: the address of the last authenticated binding request.
    public private(set) var remote: Address?
    public private(set) var srtp: SRTPSession?
    private var remoteUfrag: String?
    private var dtls: DTLSEndpoint?

    /// The caller's address as STUN writes it (for XOR-MAPPED-ADDRESS), when it can tell.
    private let transportAddress: (Address) -> TransportAddress?

    public init(localUfrag: String, localPassword: String, certificate: DTLSCertificate,
                transportAddress: @escaping (Address) -> TransportAddress? = { _ in nil }) {
        self.localUfrag = localUfrag
        self.localPassword = localPassword
        self.certificate = certificate
        self.transportAddress = transportAddress
    }

    /// The answer's credentials and certificate fingerprints; DTLS then waits for the ClientHello.
    public func accept(answer: SessionDescription, now: MonotonicTime) throws {
        guard let section = answer.media.first(where: { $0.port != 0 }),
              let ufrag = answer.value("ice-ufrag", in: section)?.value
        else { throw LoadGenError.badAnswer("no accepted section with ICE credentials") }
        let fingerprints = (section.attributes(named: "fingerprint") + answer.attributes.filter { $0.name == "fingerprint" })
            .compactMap { $0.value.flatMap(DTLSFingerprint.init(sdp:)) }
        guard !fingerprints.isEmpty else { throw LoadGenError.badAnswer("no DTLS fingerprint") }
        remoteUfrag = ufrag
        let endpoint = try DTLSEndpoint(certificate: certificate, expectedFingerprints: fingerprints, role: .server)
        _ = endpoint.start(now: now)
        dtls = endpoint
    }

    /// No ICE and no DTLS: media goes to `remote` protected with fixed keys (the floor benchmark).
    public func useFixedKeys(_ keys: SRTPKeyingMaterial, remote: Address) throws {
        srtp = try SRTPSession(peerOf: keys)
        self.remote = remote
    }

    public func handle(datagram: [UInt8], from address: Address, now: MonotonicTime) -> Output {
        var output = Output()
        guard let first = datagram.first else { return output }
        switch first {
        case 0...3: answerBinding(datagram, from: address, &output)
        case 20...63: handshake(datagram, now: now, &output)
        case 128...191: receiveRTCP(datagram, &output)
        default: break
        }
        return output
    }

    public var nextTimeout: MonotonicTime? { dtls?.nextTimeout }

    public func handleTimeout(now: MonotonicTime) -> Output {
        var output = Output()
        guard let dtls else { return output }
        apply(dtls.handleTimeout(now: now), &output)
        return output
    }

    // MARK: - ICE-lite

    private func answerBinding(_ datagram: [UInt8], from address: Address, _ output: inout Output) {
        guard let request = try? STUNMessage(parsing: datagram), request.method == STUNMethod.binding, request.messageClass == .request else { return }
        counts.bindingRequests += 1
        let key = Array(localPassword.utf8)
        guard let remoteUfrag, request.hasValidMessageIntegrity(key: key),
              let username = request.attribute(STUNAttributeType.username).map({ String(decoding: $0.value, as: UTF8.self) }),
              username == "\(localUfrag):\(remoteUfrag)"
        else {
            counts.bindingRequestsRefused += 1
            return
        }
        remote = address
        let response = STUNMessage(method: STUNMethod.binding, class: .successResponse, transactionID: request.transactionID,
                                   attributes: transportAddress(address).map { [.xorMappedAddress($0, transactionID: request.transactionID)] } ?? [])
        output.datagrams.append(response.encoded(integrityKey: key, fingerprint: true))
    }

    // MARK: - DTLS and SRTP

    private func handshake(_ datagram: [UInt8], now: MonotonicTime, _ output: inout Output) {
        guard let dtls else { return }
        apply(dtls.handle(datagram: datagram, now: now), &output)
    }

    private func apply(_ result: DTLSOutput, _ output: inout Output) {
        output.datagrams += result.datagrams
        for event in result.events {
            switch event {
            case .connected(let keys):
                do {
                    srtp = try SRTPSession(peerOf: keys)
                } catch {
                    output.failure = "\(error)"
                }
            case .failed(let error): output.failure = "\(error)"
            case .applicationData, .closed: break
            }
        }
    }

    private func receiveRTCP(_ datagram: [UInt8], _ output: inout Output) {
        guard let srtp, datagram.count >= 2, (192...223).contains(datagram[1]) else { return }
        var packet = datagram
        guard (try? srtp.unprotectRTCP(&packet)) != nil, let parsed = try? RTCPPacket.parseCompound(packet) else {
            counts.rtcpUndecryptable += 1
            return
        }
        for item in parsed {
            switch item {
            case .receiverReport: counts.receiverReports += 1
            case .pictureLossIndication(_, let media):
                counts.pictureLossIndications += 1
                output.feedback.append(.keyframeRequest(mediaSSRC: media))
            case .fullIntraRequest(_, let media, _):
                counts.fullIntraRequests += 1
                output.feedback.append(.keyframeRequest(mediaSSRC: media))
            case .nack(_, let media, let lost):
                counts.nacks += 1
                counts.nackedPackets += lost.count
                output.feedback.append(.nack(mediaSSRC: media, sequenceNumbers: lost))
            default: break
            }
        }
    }
}

public enum LoadGenError: Error, CustomStringConvertible {
    case badAnswer(String)

    public var description: String {
        switch self {
        case .badAnswer(let detail): "the recorder's answer is unusable: \(detail)"
        }
    }
}
