import Foundation

/// Where uploads go: `s3://bucket/prefix`. Objects are named `<prefix>/<recording_id>/<file>`,
/// the layout sora-archive-uploader writes (with its optional prefix), so consumers of Sora's
/// own archives read recbot's unchanged.
public struct S3Destination: Sendable, Equatable, CustomStringConvertible {
    public var bucket: String
    /// Without leading or trailing slashes; empty for the bucket's root.
    public var prefix: String

    public init(bucket: String, prefix: String = "") throws(S3Error) {
        guard Self.isValidBucket(bucket) else {
            throw S3Error(.configuration, "\(bucket): not a bucket name (3-63 lowercase letters, digits, dots and hyphens)")
        }
        let segments = prefix.split(separator: "/", omittingEmptySubsequences: true)
        guard !segments.contains(where: { $0 == "." || $0 == ".." }) else {
            throw S3Error(.configuration, "s3://\(bucket)/\(prefix): a prefix must not contain . or .. segments")
        }
        self.bucket = bucket
        self.prefix = segments.joined(separator: "/")
    }

    /// `s3://bucket` or `s3://bucket/some/prefix/`.
    public static func parse(_ text: String) throws(S3Error) -> S3Destination {
        guard text.lowercased().hasPrefix("s3://") else {
            throw S3Error(.configuration, "\(text): an upload destination is s3://bucket[/prefix]")
        }
        let rest = text.dropFirst(5)
        let bucket = rest.prefix { $0 != "/" }
        return try S3Destination(bucket: String(bucket), prefix: String(rest.dropFirst(bucket.count)))
    }

    /// The object key of one file of a recording.
    public func key(recordingID: String, fileName: String) -> String {
        prefix.isEmpty ? "\(recordingID)/\(fileName)" : "\(prefix)/\(recordingID)/\(fileName)"
    }

    /// `s3://bucket/key`, as the catalog stores it.
    public func url(key: String) -> String { "s3://\(bucket)/\(key)" }

    /// What every object URL of this destination starts with (`s3://bucket/prefix/`).
    public var objectURLPrefix: String { prefix.isEmpty ? "s3://\(bucket)/" : "s3://\(bucket)/\(prefix)/" }

    public var description: String { prefix.isEmpty ? "s3://\(bucket)" : "s3://\(bucket)/\(prefix)" }

    static func isValidBucket(_ name: String) -> Bool {
        guard (3...63).contains(name.utf8.count), let first = name.utf8.first, let last = name.utf8.last else { return false }
        let allowed = name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D }
        let edge: (UInt8) -> Bool = { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }
        return allowed && edge(first) && edge(last) && !name.contains("..")
    }
}

/// The server to talk to. With no endpoint, AWS itself in `region` (virtual-hosted names, which
/// AWS requires of new buckets); with an endpoint (MinIO, SeaweedFS, Ceph, a cloud's
/// S3-compatible service), path-style requests to it, which every such server accepts.
public struct S3Endpoint: Sendable, Equatable, CustomStringConvertible {
    public var scheme: String
    public var host: String
    public var port: Int?
    public var region: String
    public var pathStyle: Bool

    public init(url text: String?, region: String?) throws(S3Error) {
        let region = region ?? "us-east-1"
        guard !region.isEmpty, region.utf8.allSatisfy({ $0 == 0x2D || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) }) else {
            throw S3Error(.configuration, "\(region): not a region name")
        }
        self.region = region
        guard let text else {
            (scheme, host, port, pathStyle) = ("https", "s3.\(region).amazonaws.com", nil, false)
            return
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { throw S3Error(.configuration, "\(text): an S3 endpoint is http(s)://host[:port]") }
        guard components.user == nil, components.password == nil else {
            throw S3Error(.configuration, "the S3 endpoint must not carry credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        }
        guard components.path.isEmpty || components.path == "/", components.query == nil else {
            throw S3Error(.configuration, "\(text): an S3 endpoint has no path or query")
        }
        // A default port stays out of the Host header: a proxy that normalizes Host would
        // otherwise see a different header from the one signed.
        let port = components.port.flatMap { (scheme == "https" && $0 == 443) || (scheme == "http" && $0 == 80) ? nil : $0 }
        (self.scheme, self.host, self.port, self.pathStyle) = (scheme, host, port, true)
    }

    /// The Host header and the request path (encoded, as signed) of an object or bucket.
    public func address(bucket: String, key: String?) -> (host: String, path: String) {
        let hostPort = port.map { "\(host):\($0)" } ?? host
        let keyPath = key.map { "/" + SigV4.encodePath($0) } ?? "/"
        if pathStyle { return (hostPort, "/" + bucket + (key == nil ? "" : keyPath)) }
        return ("\(bucket).\(hostPort)", keyPath)
    }

    public var description: String { "\(scheme)://\(host)\(port.map { ":\($0)" } ?? "")" }
}

/// An access key pair. `description` never shows the secret (it reaches logs through errors).
public struct S3Credentials: Sendable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        (self.accessKeyID, self.secretAccessKey, self.sessionToken) = (accessKeyID, secretAccessKey, sessionToken)
    }

    /// The standard AWS variables, which every S3 tool reads too.
    public static func fromEnvironment(_ environment: [String: String]) throws(S3Error) -> S3Credentials {
        guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty,
              let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty
        else { throw S3Error(.configuration, "uploading needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment or the config file") }
        return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
    }

    public var description: String { "access key \(accessKeyID)" }
}
