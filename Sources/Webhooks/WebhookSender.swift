import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import SystemClock

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

    /// nil when delivered; otherwise why not. `signed`: with this process's secret and headers
    /// (the row is queued under them, or before references were kept); else with none.
    /// `timeoutSeconds`: this request's limit, at most the configured one.
    public func send(type: String, body: String, to url: String, signed: Bool = true, timeoutSeconds: Double? = nil) async -> String? {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        let bytes = Array(body.utf8)
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: WebhookEvent.typeHeader(for: type), value: type)
        request.headers.add(name: "User-Agent", value: "recbot")
        if signed, let secret = settings.secret {
            request.headers.add(name: WebhookSignature.headerName, value: WebhookSignature.value(body: bytes, secret: secret))
        }
        if signed { for header in settings.headers { request.headers.add(name: header.name, value: header.value) } }
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let prepared = request
        let limit = min(Double(settings.requestTimeoutSeconds), max(0.001, timeoutSeconds ?? .infinity))
        let http = self.http
        let nanoseconds = UInt64(limit * 1e9)
        // The limit covers the whole exchange, the response body included (AsyncHTTPClient's
        // deadline ends at the response head): a receiver that accepts and never answers, or
        // answers and then trickles, holds the request no longer. Whichever ends first wins.
        return await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do {
                    let response = try await http.execute(prepared, deadline: .now() + .nanoseconds(Int64(nanoseconds)))
                    _ = try await response.body.collect(upTo: 64 << 10)  // read and drop: the connection can be reused
                    return (200..<300).contains(response.status.code) ? nil : "HTTP \(response.status.code)"
                } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                    return Self.noAnswer(limit)
                } catch {
                    return Task.isCancelled ? Self.noAnswer(limit) : "\(error)"
                }
            }
            group.addTask {
                // The request is real I/O, so its limit is on the system clock, whatever clock the session reads.
                try? await SystemTimeSource().sleep(nanoseconds: Int64(clamping: nanoseconds))
                return Self.noAnswer(limit)
            }
            let first = await group.next() ?? Self.noAnswer(limit)
            group.cancelAll()
            return first
        }
    }

    private static func noAnswer(_ seconds: Double) -> String {
        "no answer within \(seconds >= 1 ? String(Int(seconds)) : String(format: "%.3f", seconds)) s"
    }
}
