import Foundation
import Logging
import NIOPosix
import Prometheus
import RecBot

/// Where `recbot join` publishes its metrics: an HTTP endpoint to scrape, a textfile for
/// node_exporter, or both.
public struct MetricsOptions: Sendable {
    public var listenHost: String?
    public var listenPort: Int?
    public var textfile: MetricsTextfile?
    /// How often the session's totals are sampled, and how often the textfile is rewritten.
    public var sampleSeconds = 1.0
    public var textfileSeconds = 5.0

    public init(listenHost: String? = nil, listenPort: Int? = nil, textfile: MetricsTextfile? = nil) {
        (self.listenHost, self.listenPort, self.textfile) = (listenHost, listenPort, textfile)
    }

    public var isEnabled: Bool { listenPort != nil || textfile != nil }
}

/// Samples a session's totals into its metrics while it runs, serves or writes them, and
/// records how it ended.
public final class MetricsReporter: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let server: MetricsHTTPServer?
    private let metrics: SessionMetrics
    private let options: MetricsOptions
    private let logger: Logger
    private let loop: Task<Void, Never>

    /// Binds the endpoint first, so a bad `--metrics-listen` fails before the session starts.
    public init(options: MetricsOptions, channel: String, session: JoinSession, logger: Logger) async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = SessionMetrics(factory: PrometheusMetricsFactory(registry: registry), channel: channel)
        if let port = options.listenPort {
            server = try await MetricsHTTPServer.start(host: options.listenHost ?? "127.0.0.1", port: port, registry: registry,
                                                       group: MultiThreadedEventLoopGroup.singleton)
            logger.notice("serving metrics", metadata: ["address": "\(options.listenHost ?? "127.0.0.1"):\(server?.port ?? port)", "path": "/metrics"])
        } else {
            server = nil
        }
        metrics.update(await session.totals())
        (self.registry, self.metrics, self.options, self.logger) = (registry, metrics, options, logger)
        loop = Task { [options] in
            var sinceTextfile = 0.0
            var textfileFailed = false
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: UInt64(options.sampleSeconds * 1e9))
                if Task.isCancelled { break }
                metrics.update(await session.totals())
                sinceTextfile += options.sampleSeconds
                guard let textfile = options.textfile, sinceTextfile >= options.textfileSeconds else { continue }
                sinceTextfile = 0
                do throws(MetricsTextfile.Failure) {
                    try textfile.write(registry)
                    textfileFailed = false
                } catch {
                    // Logged once per failure streak: the session goes on without it.
                    if !textfileFailed { logger.warning("cannot write the metrics textfile", metadata: ["error": "\(error)"]) }
                    textfileFailed = true
                }
            }
        }
    }

    /// The session ended: a last sample, its end reason, the textfile's final version.
    public func finish(session: JoinSession, outcome: JoinOutcome) async {
        loop.cancel()
        _ = await loop.value
        metrics.update(await session.totals())
        metrics.ended(outcome)
        if let textfile = options.textfile {
            do throws(MetricsTextfile.Failure) { try textfile.write(registry) } catch {
                logger.error("cannot write the metrics textfile", metadata: ["error": "\(error)"])
            }
        }
    }

    public func close() async {
        loop.cancel()
        await server?.close()
    }
}
