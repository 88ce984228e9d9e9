// libFuzzer target for what Sora sends: signaling JSON (WebSocket or the `signaling` data
// channel) and data-channel payloads with compression (zlib inflate, size-limited) and the
// sender header, and JSON-RPC replies on the `rpc` channel, then the text search indexes of
// such a message. No crash; an inflated payload never exceeds its limit, nor an indexed text
// its cap.
import Archive
import FuzzSupport
import SoraSignalingCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSignaling(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? IncomingMessage(parsing: text)
    _ = LayerPreference.describeReply(text)
    for (compress, header) in [(true, true), (true, false), (false, true)] {
        let settings = SoraDataChannelSettings(label: "#fuzz", compress: compress, senderConnectionIDHeader: header)
        if let message = try? SoraDataChannelMessage(raw: bytes, settings: settings, maximumSize: 65_536) {
            precondition(message.data.count <= 65_536, "inflated past the limit")
        }
    }
    for payload in [EventPayload.classify(text: text), .binary(bytes)] {
        let indexed = SearchText.of(payload)
        precondition((indexed?.utf8.count ?? 0) <= SearchText.maximumBytes, "indexed past the cap")
        _ = SearchSnippet.around(indexed ?? text, match: String(text.prefix(4)))
    }
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzSignaling) }
}
