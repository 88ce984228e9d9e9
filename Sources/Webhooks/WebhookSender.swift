import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// POSTs an outbox row's body to its URL. A 2xx answer is a delivery; anything else (an
/// error status, a refused connection, no answer within the timeout) is a failure, said in a
/// few words for the row's `last_error`.
public final class WebhookSender: Sendable {
    private let http: HTTPClient
    private let settings: WebhookSettings

    public init(settings: WebhookSettings) {
        self.settings = settings
        var configuration = HTTPClient.Configuration()
        if let caFile = settings.caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(caFile)
            configuration.tlsConfiguration = tls
        }
        configuration.timeout = .init(connect: .seconds(min(5, settings.requestTimeoutSeconds)), read: .seconds(settings.requestTimeoutSeconds))
        configuration.redirectConfiguration = .disallow  // as sora-archive-uploader: a redirect is an answer, not a delivery
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    /// nil when delivered; otherwise why not.
    public func send(type: String, body: String, to url: String) async -> String? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        let bytes = Array(body.utf8)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: WebhookEvent.typeHeader(for: type), value: type)
        request.headers.add(name: "User-Agent", value: "recbot")
        if let secret = settings.secret { request.headers.add(name: WebhookSignature.headerName, value: WebhookSignature.value(body: bytes, secret: secret)) }
        for header in settings.headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: bytes))
        do {
            let response = try await http.execute(request, timeout: .seconds(settings.requestTimeoutSeconds))
            _ = try? await response.body.collect(upTo: 64 << 10)  // read and drop: the connection can be reused
            return (200..<300).contains(response.status.code) ? nil : "HTTP \(response.status.code)"
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return "no answer within \(settings.requestTimeoutSeconds) s"
        } catch {
            return "\(error)"
        }
    }
}
