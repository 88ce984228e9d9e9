/// Why an S3 request failed, sorted by what the operator must do about it: fix the
/// configuration, fix the credentials, or wait for the server (recbot retries those).
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A destination, endpoint or region that cannot work; a bucket that does not exist.
        case configuration
        /// The server refused the access key, the signature, or access to the bucket.
        case credentials
        /// Unreachable, timed out, throttled or a server error: worth another try.
        case unavailable
        /// The server answered something recbot cannot use, or an upload did not verify.
        case protocolViolation
        /// A local file could not be read.
        case localFile
        /// The endpoint's TLS certificate was refused (untrusted CA, wrong name): not retried,
        /// since only a change of configuration (`--s3-ca-file`, the endpoint) helps.
        case certificateRejected
    }

    public var kind: Kind
    public var message: String
    /// S3's error code (`NoSuchBucket`, `SlowDown`…), when the server sent one.
    public var code: String?
    public var httpStatus: Int?
    /// `x-amz-bucket-region` of the answer, when AWS says where the bucket is.
    public var bucketRegion: String?

    public init(_ kind: Kind, _ message: String, code: String? = nil, httpStatus: Int? = nil) {
        (self.kind, self.message, self.code, self.httpStatus) = (kind, message, code, httpStatus)
    }

    public var description: String { message }

    /// What an error response means: S3 codes first (they are more precise than the status).
    public static func fromResponse(status: Int, code: String?, message: String?, operation: String) -> S3Error {
        let detail = [code, message].compactMap { $0.map(printable) }.joined(separator: ": ")
        let text = "\(operation): HTTP \(status)" + (detail.isEmpty ? "" : " \(detail)")
        let kind: Kind
        switch code {
        case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
             "AuthorizationHeaderMalformed", "InvalidSecurity":
            kind = .credentials
        case "NoSuchBucket", "InvalidBucketName", "PermanentRedirect", "RequestTimeTooSkewed":
            kind = .configuration
        case "SlowDown", "InternalError", "ServiceUnavailable", "RequestTimeout":
            kind = .unavailable
        default:
            switch status {
            case 401, 403: kind = .credentials
            case 408, 429, 500...599: kind = .unavailable
            default: kind = .protocolViolation
            }
        }
        return S3Error(kind, text, code: code, httpStatus: status)
    }

    /// A server's text as one short line: it goes into a one-line error, the logs and the catalog.
    static func printable(_ text: String) -> String {
        let flat = String(String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
        return flat.count > 200 ? String(flat.prefix(200)) + "…" : flat
    }

    /// Another attempt may succeed.
    public var isRetryable: Bool { kind == .unavailable }
}
