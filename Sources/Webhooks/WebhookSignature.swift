import Crypto

/// `X-Recbot-Signature: sha256=<hex>`: HMAC-SHA256 of the exact body with the shared secret,
/// so a receiver can tell recbot's requests from anyone else's.
public enum WebhookSignature {
    public static let headerName = "X-Recbot-Signature"

    public static func value(body: [UInt8], secret: [UInt8]) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: secret))
        return "sha256=" + code.map { byte in String(byte, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
