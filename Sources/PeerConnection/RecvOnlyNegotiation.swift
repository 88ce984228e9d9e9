import DTLS
import ICE
import Media
import SCTP
import SDP
import STUN

public enum NegotiationError: Error, Equatable, Sendable, CustomStringConvertible {
    case sdp(SDPError)
    case dtls(DTLSError)
    case noTransport
    /// The offer has no section at all (RFC 3264 §5: streams come later, in a re-offer), as an
    /// empty room's may: the answer to send while waiting for one.
    case nothingToReceive(answerSDP: String)

    public var description: String {
        switch self {
        case .sdp(let error): "\(error)"
        case .dtls(let error): "\(error)"
        case .noTransport: "the offer has no section recbot can receive, so there is no transport to set up"
        case .nothingToReceive: "the offer has no section yet"
        }
    }
}

/// Turns an offer into recbot's answer and a wired `PeerConnectionCore` for the sockets
/// in `hosts`: ICE credentials and candidates, role (controlling only against ICE-lite),
/// DTLS client verifying the offer's fingerprints.
public struct RecvOnlyNegotiation {
    public var answer: RecvOnlyAnswer
    public var core: PeerConnectionCore
    /// Our transport parameters, reused to answer re-offers (without candidates: ICE runs already).
    public var local: LocalTransportParameters
    public var capabilities: ReceiverCapabilities

    static let iceCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")

    public init(offer: SessionDescription, hosts: [TransportAddress], certificate: DTLSCertificate,
                capabilities: ReceiverCapabilities = ReceiverCapabilities(), recovery: RecoveryPolicy = RecoveryPolicy(), trickle: Bool = false,
                relays: [RelayServer] = [], relayOnly: Bool = false, overload: OverloadPolicy = OverloadPolicy(),
                random: @escaping () -> UInt64) throws(NegotiationError) {
        func randomString(_ count: Int) -> String {
            String((0..<count).map { _ in RecvOnlyNegotiation.iceCharacters[Int(random() % UInt64(RecvOnlyNegotiation.iceCharacters.count))] })
        }
        guard let fingerprint = certificate.fingerprint() else { throw .dtls(.setup("cannot fingerprint the certificate")) }
        let local = LocalTransportParameters(
            iceUfrag: randomString(8), icePwd: randomString(24), fingerprint: fingerprint,
            // Relay-only: no host candidate is offered; the relayed one is trickled once allocated.
            // With relays, candidates keep coming after the answer, so no end-of-candidates.
            candidates: trickle || relayOnly ? [] : ICEAgent.hostCandidates(hosts).map(\.sdp),
            endOfCandidates: !trickle && relays.isEmpty,
            sessionID: String(random() >> 2))
        let answer: RecvOnlyAnswer
        do {
            answer = try RecvOnlyAnswerBuilder.answer(to: offer, local: local, capabilities: capabilities)
        } catch {
            throw .sdp(error)
        }
        guard !answer.media.isEmpty else { throw .nothingToReceive(answerSDP: answer.sdp.serialized) }
        guard answer.media.contains(where: \.accepted), !answer.remote.iceUfrag.isEmpty else { throw .noTransport }
        var configuration = ICEConfiguration(
            localUfrag: local.iceUfrag, localPassword: local.icePwd, remoteUfrag: answer.remote.iceUfrag,
            remotePassword: answer.remote.icePwd, role: answer.remote.iceLite ? .controlling : .controlled, tieBreaker: random())
        configuration.maximumRemoteCandidates = 64
        configuration.relayOnly = relayOnly
        // Consent is checked about every 2 s, so a quiet path shows within seconds; the
        // session's watch (LivenessWatch) then keeps it while the network is dark, or rejoins at
        // once when the server answers again but this path does not. Consent itself runs out
        // after RFC 7675's 30 s: an outage shorter than that costs no more than itself.
        configuration.consentIntervalMilliseconds = 2_000
        configuration.consentTimeoutMilliseconds = 30_000
        let ice = ICEAgent(configuration: configuration, hosts: hosts, remoteCandidates: answer.remote.candidates, random: random)
        if answer.remote.endOfCandidates { ice.setRemoteEndOfCandidates() }
        let dtls: DTLSEndpoint
        do {
            dtls = try DTLSEndpoint(certificate: certificate, expectedFingerprints: answer.remote.fingerprints)
        } catch {
            throw .dtls(error)
        }
        self.answer = answer
        self.capabilities = capabilities
        var dataChannels: DataChannelEndpoint?
        if let application = answer.media.first(where: { $0.kind == .application && $0.accepted }) {
            // Each side's max-message-size limits what the other sends it (RFC 8841 §6): ours
            // bounds reassembly, the offer's bounds our own messages (64 KiB when absent).
            dataChannels = DataChannelEndpoint(association: SCTPAssociation(port: UInt16(clamping: application.sctpPort ?? 5000),
                                                                             maximumMessageSize: capabilities.maxMessageSize,
                                                                             peerMaximumMessageSize: application.maxMessageSize ?? 65_536, random: random))
        }
        // Always present, even for a data-channel-only first offer: a re-offer may add media.
        let mediaConfiguration = MediaReceiverConfiguration(
            localSSRC: UInt32(truncatingIfNeeded: random() | 1), cname: randomString(16), recovery: recovery,
            reducedSizeRTCP: answer.media.contains { $0.accepted && $0.reducedSizeRTCP })
        let media = MediaReceiver(configuration: mediaConfiguration, random: random)
        _ = media.update(tracks: ReceiveTrack.tracks(from: answer.media))
        self.core = PeerConnectionCore(ice: ice, dtls: dtls, dataChannels: dataChannels, media: media, relays: relays, overload: overload,
                                       random: random)
        var reusable = local
        reusable.candidates = []
        reusable.endOfCandidates = false
        reusable.sessionVersion += 1
        self.local = reusable
    }
}
