import Foundation

/// The simulcast and spotlight layers recbot wants, and the JSON-RPC requests (over Sora's
/// `rpc` data channel, sora-protocol.md §7.6) that ask for them once signaling has switched to
/// the data channels. Only methods the offer's `rpc_methods` lists are sent.
public struct LayerPreference: Sendable, Equatable {
    /// `r0`, `r1` or `r2`: the simulcast layer of every sender.
    public var simulcastRID: String?
    /// Spotlight's layers for focused and unfocused senders (`r0`…`r2`, `none`).
    public var spotlightFocusRID: String?
    public var spotlightUnfocusRID: String?

    public init(simulcastRID: String? = nil, spotlightFocusRID: String? = nil, spotlightUnfocusRID: String? = nil) {
        (self.simulcastRID, self.spotlightFocusRID, self.spotlightUnfocusRID) = (simulcastRID, spotlightFocusRID, spotlightUnfocusRID)
    }

    public static let requestSimulcastRID = "2025.2.0/RequestSimulcastRid"
    public static let requestSpotlightRID = "2025.2.0/RequestSpotlightRid"

    /// The requests to send, numbered from `firstID`, for the methods Sora allows.
    public func requests(allowed methods: [String], firstID: Int = 1) -> [(id: Int, method: String, body: String)] {
        var calls: [(String, [String: Any])] = []
        if let rid = simulcastRID, methods.contains(Self.requestSimulcastRID) {
            calls.append((Self.requestSimulcastRID, ["rid": rid]))
        }
        var spotlight: [String: Any] = [:]
        if let focus = spotlightFocusRID { spotlight["spotlight_focus_rid"] = focus }
        if let unfocus = spotlightUnfocusRID { spotlight["spotlight_unfocus_rid"] = unfocus }
        if !spotlight.isEmpty, methods.contains(Self.requestSpotlightRID) { calls.append((Self.requestSpotlightRID, spotlight)) }
        return calls.enumerated().map { index, call in
            let object: [String: Any] = ["jsonrpc": "2.0", "id": firstID + index, "method": call.0, "params": call.1]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return (firstID + index, call.0, String(decoding: data, as: UTF8.self))
        }
    }

    /// A JSON-RPC reply, in a few words for the log: its id and either its result's `rid` or its error.
    public static func describeReply(_ text: String) -> (id: Int?, outcome: String)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any], object["jsonrpc"] as? String == "2.0" else {
            return nil
        }
        let id = object["id"] as? Int
        if let error = object["error"] as? [String: Any] {
            return (id, "error \(error["code"] as? Int ?? 0): \(String((error["message"] as? String ?? "").prefix(200)))")
        }
        let result = object["result"] as? [String: Any]
        return (id, "ok" + ((result?["rid"] as? String).map { " rid \(String($0.prefix(8)))" } ?? ""))
    }
}
