import Archive
import Foundation

/// What a caption calls each sender: a name from its connection's metadata (the keys
/// applications commonly use for a display name), else its client id when the application
/// chose one, else its connection id.
public struct SenderNames: Sendable, Equatable {
    /// Metadata keys read for a display name, in order of preference.
    static let metadataKeys = ["name", "display_name", "displayName", "user_name", "username", "nickname"]
    private var names: [String: String] = [:]

    public init() {}

    public init(connections: [ConnectionRecord]) {
        for connection in connections {
            if let name = Self.name(of: connection) { names[connection.connectionID] = name }
        }
    }

    public func name(for connectionID: String) -> String { names[connectionID] ?? connectionID }

    static func name(of connection: ConnectionRecord) -> String? {
        if let text = connection.metadata, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
           let name = metadataKeys.lazy.compactMap({ object[$0] as? String }).first(where: { !$0.isEmpty }) {
            return name
        }
        // Sora sets the client id to the connection id when the application gives none.
        if let client = connection.clientID, !client.isEmpty, client != connection.connectionID { return client }
        return nil
    }
}
