import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL
import TLSFailure

/// The S3 operations an archive upload needs, over async-http-client, signed with `SigV4`.
/// Requests the server could not serve (unreachable, 5xx, throttled) are retried with
/// `RetryPolicy`; refusals (credentials, a missing bucket) fail at once.
public final class S3Client: Sendable {
    public let endpoint: S3Endpoint
    private let signer: SigV4
    private let http: HTTPClient
    private let retry: RetryPolicy
    private let logger: Logger
    /// A response body larger than this is not S3 talking (bodies here are small XML).
    private static let maximumResponseBytes = XMLElementNode.maximumBytes

    /// `connectTimeout` bounds each attempt to reach the server (async-http-client keeps
    /// retrying a refused connection until it passes). `caFile`: PEM certificates to check an
    /// https endpoint with, instead of the system's (a private S3 server's CA).
    public init(endpoint: S3Endpoint, credentials: S3Credentials, retry: RetryPolicy = RetryPolicy(), connectTimeout: TimeAmount = .seconds(10),
                caFile: String? = nil, logger: Logger) {
        self.endpoint = endpoint
        self.signer = SigV4(credentials: credentials, region: endpoint.region)
        self.retry = retry
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        configuration.timeout = .init(connect: connectTimeout, read: .seconds(60))
        configuration.redirectConfiguration = .disallow  // a redirect would need re-signing; S3 says why in the body
        self.http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    // MARK: Operations

    /// Fails with `.credentials` or `.configuration` (no such bucket) before anything is sent.
    public func checkBucket(_ bucket: String) async throws(S3Error) {
        // A HEAD answer has no body: the status (and a region header) is all there is to go on.
        do {
            _ = try await send(S3Request(method: .HEAD, bucket: bucket, key: nil), operation: "HeadBucket \(bucket)")
        } catch where error.httpStatus == 404 {
            throw S3Error(.configuration, "bucket \(bucket) does not exist at \(endpoint)", code: "NoSuchBucket", httpStatus: 404)
        } catch where error.httpStatus == 403 {
            throw S3Error(.credentials, "\(endpoint) refused access key \(signer.credentials.accessKeyID) for bucket \(bucket) (HTTP 403: "
                + "a wrong secret, a key without s3:ListBucket on it, or a clock more than 15 minutes off)", httpStatus: 403)
        } catch where error.httpStatus == 301 || error.httpStatus == 400 {
            let region = error.bucketRegion.map { "; the bucket is in \($0): set --s3-region \($0)" } ?? ""
            throw S3Error(.configuration, "bucket \(bucket) at \(endpoint) refused region \(endpoint.region) (HTTP \(error.httpStatus ?? 0))\(region)",
                          httpStatus: error.httpStatus)
        }
    }

    /// One PUT; the server checks the body against Content-MD5. Returns the ETag.
    public func putObject(bucket: String, key: String, body: ByteBuffer, md5: [UInt8], contentType: String) async throws(S3Error) -> String {
        var request = S3Request(method: .PUT, bucket: bucket, key: key, body: body)
        request.headers += [("Content-MD5", Data(md5).base64EncodedString()), ("Content-Type", contentType)]
        let response = try await send(request, operation: "PutObject \(key)")
        return try etag(response, operation: "PutObject \(key)")
    }

    public func createMultipartUpload(bucket: String, key: String, contentType: String) async throws(S3Error) -> String {
        var request = S3Request(method: .POST, bucket: bucket, key: key, query: [("uploads", "")])
        request.headers.append(("Content-Type", contentType))
        let response = try await send(request, operation: "CreateMultipartUpload \(key)")
        guard let id = S3Responses.uploadID(response.body) else {
            throw S3Error(.protocolViolation, "CreateMultipartUpload \(key): no UploadId in the answer")
        }
        return id
    }

    public func uploadPart(bucket: String, key: String, uploadID: String, number: Int, body: ByteBuffer, md5: [UInt8]) async throws(S3Error) -> String {
        var request = S3Request(method: .PUT, bucket: bucket, key: key, query: [("partNumber", "\(number)"), ("uploadId", uploadID)], body: body)
        request.headers.append(("Content-MD5", Data(md5).base64EncodedString()))
        let response = try await send(request, operation: "UploadPart \(key) #\(number)")
        return try etag(response, operation: "UploadPart \(key) #\(number)")
    }

    /// The parts the server holds, or nil when it no longer knows the upload (completed,
    /// aborted, or expired by a lifecycle rule): the caller then starts over.
    public func listParts(bucket: String, key: String, uploadID: String) async throws(S3Error) -> [StoredPart]? {
        var parts: [StoredPart] = []
        var marker: Int?
        for _ in 0..<100 {  // 10,000 parts at 1,000 per page; a server that pages forever stops here
            var query = [("uploadId", uploadID)]
            if let marker { query.append(("part-number-marker", "\(marker)")) }
            let response: S3Response
            do {
                response = try await send(S3Request(method: .GET, bucket: bucket, key: key, query: query), operation: "ListParts \(key)")
            } catch where error.code == "NoSuchUpload" {
                return nil
            }
            guard let page = S3Responses.parts(response.body) else { throw S3Error(.protocolViolation, "ListParts \(key): unreadable answer") }
            parts += page.parts
            guard let next = page.nextMarker, next > (marker ?? 0) else { return parts }
            marker = next
        }
        throw S3Error(.protocolViolation, "ListParts \(key): more than 100 pages")
    }

    /// The server may answer 200 and still fail, with an Error document in the body, and while a
    /// long completion runs AWS keeps the connection alive with whitespace before the XML: both
    /// are read here, and a retryable failure (or an answer cut short) is tried again.
    public func completeMultipartUpload(bucket: String, key: String, uploadID: String, parts: [(number: Int, etag: String)]) async throws(S3Error) -> String {
        let body = ByteBuffer(string: S3Responses.completionBody(parts))
        let request = S3Request(method: .POST, bucket: bucket, key: key, query: [("uploadId", uploadID)], body: body)
        let operation = "CompleteMultipartUpload \(key)"
        return try await send(request, operation: operation) { (response: S3Response) throws(S3Error) -> String in
            if let failure = S3Responses.error(response.body) {
                throw S3Error.fromResponse(status: 200, code: failure.code, message: failure.message, operation: operation)
            }
            guard let etag = S3Responses.completedETag(response.body) else {
                throw S3Error(.unavailable, "\(operation): the answer has no ETag (cut short?)")
            }
            return etag
        }
    }

    public func abortMultipartUpload(bucket: String, key: String, uploadID: String) async throws(S3Error) {
        do {
            _ = try await send(S3Request(method: .DELETE, bucket: bucket, key: key, query: [("uploadId", uploadID)]), operation: "AbortMultipartUpload \(key)")
        } catch where error.code == "NoSuchUpload" {}
    }

    /// Deletes an object; one that is not there is no error (S3 answers 204 either way).
    public func deleteObject(bucket: String, key: String) async throws(S3Error) {
        do {
            _ = try await send(S3Request(method: .DELETE, bucket: bucket, key: key), operation: "DeleteObject \(key)")
        } catch where error.httpStatus == 404 {}
    }

    /// Size and ETag of a stored object, or nil when there is none.
    public func headObject(bucket: String, key: String) async throws(S3Error) -> (size: Int64, etag: String)? {
        let response: S3Response
        do {
            response = try await send(S3Request(method: .HEAD, bucket: bucket, key: key), operation: "HeadObject \(key)")
        } catch where error.httpStatus == 404 {
            return nil
        }
        guard let size = response.headers.first(name: "content-length").flatMap(Int64.init),
              let etag = response.headers.first(name: "etag") else {
            throw S3Error(.protocolViolation, "HeadObject \(key): no size or ETag in the answer")
        }
        return (size, etag)
    }

    // MARK: Transport

    private func etag(_ response: S3Response, operation: String) throws(S3Error) -> String {
        guard let etag = response.headers.first(name: "etag"), !etag.isEmpty else {
            throw S3Error(.protocolViolation, "\(operation): no ETag in the answer")
        }
        return etag
    }

    /// Sends with retries; a 2xx answer is returned, anything else thrown as an `S3Error`.
    private func send(_ request: S3Request, operation: String) async throws(S3Error) -> S3Response {
        try await send(request, operation: operation) { (response: S3Response) throws(S3Error) -> S3Response in response }
    }

    /// Sends with retries, `check` reading the 2xx answer inside the loop, so an answer that
    /// says "try again" (a 200 carrying a retryable Error) is retried like a 5xx.
    private func send<T>(_ request: S3Request, operation: String, check: (S3Response) throws(S3Error) -> T) async throws(S3Error) -> T {
        var attempt = 1
        while true {
            do {
                return try check(try await sendOnce(request, operation: operation))
            } catch {
                guard error.isRetryable, let delay = retry.delay(afterAttempt: attempt, unit: Double.random(in: 0..<1)) else { throw error }
                logger.warning("retrying S3 request", metadata: [
                    "operation": "\(operation)", "attempt": "\(attempt)", "delay_s": "\(String(format: "%.2f", delay))", "error": "\(error)",
                ])
                try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
                attempt += 1
            }
        }
    }

    private func sendOnce(_ request: S3Request, operation: String) async throws(S3Error) -> S3Response {
        let address = endpoint.address(bucket: request.bucket, key: request.key)
        let payload = request.body.map { SHA256.hash(data: $0.readableBytesView).hex } ?? SigV4.emptyPayloadHash
        var headers = request.headers + [("Host", address.host)]
        headers += signer.sign(method: request.method.rawValue, path: address.path, query: request.query, headers: headers,
                               payloadHash: payload, date: Date())
        var http = HTTPClientRequest(url: endpoint.description + address.path + request.queryString)
        http.method = request.method
        for (name, value) in headers { http.headers.add(name: name, value: value) }
        if let body = request.body { http.body = .bytes(body) }
        let timeout = TimeAmount.seconds(60 + Int64((request.body?.readableBytes ?? 0) >> 18))  // and 4 s per MiB
        do {
            let response = try await self.http.execute(http, timeout: timeout, logger: logger)
            var body = try await response.body.collect(upTo: Self.maximumResponseBytes)
            let data = body.readData(length: body.readableBytes) ?? Data()
            let status = Int(response.status.code)
            guard (200..<300).contains(status) else {
                let failure = S3Responses.error(data)
                var error = S3Error.fromResponse(status: status, code: failure?.code, message: failure?.message, operation: operation)
                error.bucketRegion = response.headers.first(name: "x-amz-bucket-region")
                throw error
            }
            return S3Response(status: status, headers: response.headers, body: data)
        } catch let error as S3Error {
            throw error
        } catch {
            throw S3Error(TLSFailure.isCertificateRejection(error) ? .certificateRejected : .unavailable,
                          "\(operation): \(endpoint): \(describe(error))")
        }
    }

    private func describe(_ error: any Error) -> String {
        if let tls = TLSFailure.describe(error, serverName: endpoint.host, trustHint: "--s3-ca-file names a CA file") { return tls }
        if let error = error as? HTTPClientError { return "\(error)" }
        return String(describing: error)
    }
}

/// One request before addressing and signing.
struct S3Request: Sendable {
    var method: HTTPMethod
    var bucket: String
    var key: String?
    var query: [(String, String)] = []
    var headers: [(String, String)] = []
    var body: ByteBuffer?

    init(method: HTTPMethod, bucket: String, key: String?, query: [(String, String)] = [], body: ByteBuffer? = nil) {
        (self.method, self.bucket, self.key, self.query, self.body) = (method, bucket, key, query, body)
    }

    var queryString: String {
        query.isEmpty ? "" : "?" + query.map { "\(SigV4.encode($0.0))=\(SigV4.encode($0.1))" }.joined(separator: "&")
    }
}

struct S3Response: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: Data
}
