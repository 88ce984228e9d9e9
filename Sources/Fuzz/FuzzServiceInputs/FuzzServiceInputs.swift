// libFuzzer target for what reaches `recbot serve` from outside: Sora's webhook bodies, the
// API's recording requests and a rules file (an operator's, but read like any file). No
// crash; whatever parses validates, and its join flags come in name/value pairs.
import FuzzSupport
import ServiceCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServiceInputs(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if case .sessionCreated(let session)? = try? SoraWebhookEvent(body: bytes) {
        precondition(!session.channelID.isEmpty && session.channelID.utf8.count <= 255, "an accepted channel id is bounded")
    }
    if let request = try? RecordingRequest(body: bytes) {
        precondition((try? request.options.validate()) != nil, "an accepted request validates")
        _ = request.options.joinArguments(secondsLeft: request.expireTime)
    }
    if let rules = try? RecordingRules(json: bytes) {
        for rule in rules.rules { _ = rule.matches(SoraSessionInfo(channelID: "meet-1", sessionID: "S", metadata: #"{"record":true}"#)) }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzServiceInputs) }
}
