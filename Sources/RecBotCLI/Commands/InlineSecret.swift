import Foundation

/// Spots what looks like a credential in JSON given on the command line (`--metadata '{…}'`),
/// where `ps`, /proc and shell history show it to every user of the machine. Only a warning:
/// the value is used as given.
enum InlineSecret {
    /// Key names that usually carry a credential.
    static let suspiciousKeyParts = ["token", "secret", "password", "passwd", "credential", "signature", "apikey", "api_key", "auth"]

    /// Why `json` looks secret (a key's name, never its value), or nil.
    static func reason(inJSON json: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed]) else { return nil }
        return reason(in: object, depth: 0)
    }

    private static func reason(in value: Any, depth: Int) -> String? {
        guard depth < 16 else { return nil }
        if let dictionary = value as? [String: Any] {
            for (key, nested) in dictionary.sorted(by: { $0.key < $1.key }) {
                let lowered = key.lowercased()
                if suspiciousKeyParts.contains(where: lowered.contains), !(nested is NSNull) { return "a \"\(key)\" field" }
                if let found = reason(in: nested, depth: depth + 1) { return found }
            }
        } else if let array = value as? [Any] {
            for element in array { if let found = reason(in: element, depth: depth + 1) { return found } }
        } else if let text = value as? String, looksLikeJWT(text) {
            return "a JSON Web Token"
        }
        return nil
    }

    /// Three base64url segments joined by dots, the first a JSON header (`eyJ`).
    private static func looksLikeJWT(_ text: String) -> Bool {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        let alphabet = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")
        return segments.count == 3 && text.hasPrefix("eyJ")
            && segments.allSatisfy { !$0.isEmpty && $0.unicodeScalars.allSatisfy(alphabet.contains) }
    }
}
