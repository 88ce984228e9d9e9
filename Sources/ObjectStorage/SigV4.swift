import Crypto
import Foundation

/// AWS Signature Version 4 for S3, header-signed. Written here because the package set has no
/// S3 SDK (no Soto, no aws-sdk-swift): the signing is small and specified to the byte, and
/// swift-crypto supplies HMAC-SHA256 and SHA-256. Pure: request parts and a time in, headers out.
public struct SigV4: Sendable {
    public var credentials: S3Credentials
    public var region: String
    public var service = "s3"

    public init(credentials: S3Credentials, region: String) {
        (self.credentials, self.region) = (credentials, region)
    }

    /// The SHA-256 of an empty body, hex.
    public static let emptyPayloadHash = SHA256.hash(data: [UInt8]()).hex

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`, the session token
    /// when there is one, and `Authorization`. `headers` are the request's others (Host among
    /// them), every one of which is signed; `path` is already URI-encoded.
    public func sign(method: String, path: String, query: [(String, String)], headers: [(String, String)],
                     payloadHash: String, date: Date) -> [(String, String)] {
        let amzDate = Self.timestamp(date)
        var added = [("x-amz-date", amzDate), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let canonical = canonicalRequest(method: method, path: path, query: query, headers: headers + added, payloadHash: payloadHash)
        let scope = "\(amzDate.prefix(8))/\(region)/\(service)/aws4_request"
        let stringToSign = "AWS4-HMAC-SHA256\n\(amzDate)\n\(scope)\n\(SHA256.hash(data: Data(canonical.request.utf8)).hex)"
        let signature = HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: signingKey(day: String(amzDate.prefix(8)))).hex
        added.append(("Authorization",
                      "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(canonical.signedHeaders), Signature=\(signature)"))
        return added
    }

    /// The canonical request and its signed-header list (exposed for the specification's vectors).
    func canonicalRequest(method: String, path: String, query: [(String, String)], headers: [(String, String)],
                          payloadHash: String) -> (request: String, signedHeaders: String) {
        let encoded: [(name: String, value: String)] = query.map { (Self.encode($0.0), Self.encode($0.1)) }
        let sorted = encoded.sorted { (a, b) -> Bool in a.name == b.name ? a.value < b.value : a.name < b.name }
        let queryText = sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        var merged: [String: [String]] = [:]
        for (name, value) in headers { merged[name.lowercased(), default: []].append(Self.trimmed(value)) }
        let names = merged.keys.sorted()
        let headerText = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signed = names.joined(separator: ";")
        return ("\(method)\n\(path)\n\(queryText)\n\(headerText)\n\(signed)\n\(payloadHash)", signed)
    }

    private func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year!, c.month!, c.day!, c.hour!, c.minute!, c.second!)
    }

    /// Header values are trimmed and inner runs of spaces collapse to one.
    private static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters (query names and values).
    static func encode(_ text: String, keepSlash: Bool = false) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E
            if unreserved || (keepSlash && byte == 0x2F) { out.unicodeScalars.append(Unicode.Scalar(byte)) } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// An object key as a request path: S3 encodes each segment once and keeps the slashes.
    static func encodePath(_ key: String) -> String { encode(key, keepSlash: true) }
}

extension Sequence where Element == UInt8 {
    /// Lowercase hexadecimal.
    var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in self { out.append(digits[Int(byte >> 4)]); out.append(digits[Int(byte & 0x0F)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Digest {
    var hex: String { Array(self).hex }
}

extension HashedAuthenticationCode {
    var hex: String { Array(self).hex }
}
