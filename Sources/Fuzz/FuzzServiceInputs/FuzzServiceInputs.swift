// libFuzzer target for what reaches `recbot serve` from outside: Sora's webhook bodies, the
// API's recording requests, a rules file (an operator's, but read like any file) and the web
// archive's Range header and form queries. No crash; whatever parses validates, and its join flags come in
// name/value pairs; a range lies inside the file.
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
    let header = String(decoding: bytes.prefix(256), as: UTF8.self)
    let form = FormQuery(header)
    precondition(form.pairs.count <= FormQuery.maximumPairs, "pairs are bounded")
    for size in [Int64(0), 1, 1_000, Int64.max / 2] {
        if case .part(let range) = ByteRange(header: header, size: size) {
            precondition(range.lowerBound >= 0 && range.upperBound < size, "a range outside the file")
        }
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzServiceInputs) }
}
