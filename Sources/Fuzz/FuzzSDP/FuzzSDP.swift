// libFuzzer target for the SDP parser, the candidate/fingerprint grammar and the answer builder.

import FuzzSupport
import ICE
import Keying
import SDP

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSDP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: data == nil ? 0 : size), as: UTF8.self)
    _ = ICECandidate(sdp: text)
    _ = DTLSFingerprint(sdp: text)
    guard let offer = try? SessionDescription(parsing: text) else { return 0 }
    var capabilities = ReceiverCapabilities()
    capabilities.acceptsDataChannels = true
    let local = LocalTransportParameters(
        iceUfrag: "fuzz", icePwd: "fuzzfuzzfuzzfuzzfuzzfuzz",
        fingerprint: DTLSFingerprint(algorithm: "sha-256", bytes: Array(repeating: 1, count: 32))!, sessionID: "1")
    if let answer = try? RecvOnlyAnswerBuilder.answer(to: offer, local: local, capabilities: capabilities) {
        // The oracle: our own answer must always parse again. Failing it is the bug to find.
        if (try? SessionDescription(parsing: answer.sdp.serialized)) == nil {
            preconditionFailure("recbot's answer does not re-parse:\n\(answer.sdp.serialized)")
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSDP) }
}
