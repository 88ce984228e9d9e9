import ArgumentParser
import Foundation
import Logging
import RecBot
import RecBotMetrics

/// `join`'s metrics flags: a Prometheus endpoint, a node_exporter textfile, or both.
struct MetricsArguments: ParsableArguments {
    @Option(name: .customLong("metrics-listen"), help: ArgumentHelp(
        "Serve Prometheus metrics at http://ADDR:PORT/metrics while recording (127.0.0.1:9464, [::1]:9464, a pod's own IP; :9464 for every address). At most 32 connections, each closed 10 s after its last answer or when its request takes longer.",
        valueName: "addr:port"))
    var listen: String?
    @Option(name: .customLong("metrics-textfile"), help: ArgumentHelp(
        "Also write them to this .prom file for node_exporter's textfile collector: every 5 s, and once at the end.", valueName: "path"))
    var textfile: String?

    func options(settings: Settings) throws -> MetricsOptions {
        var options = MetricsOptions()
        if let listen = listen ?? settings[.metricsListen] {
            (options.listenHost, options.listenPort) = try Self.hostAndPort(listen)
        }
        if let path = textfile ?? settings[.metricsTextfile] {
            do { options.textfile = try MetricsTextfile(path: path) } catch { throw ValidationError("--metrics-textfile \(error)") }
        }
        return options
    }

    /// `host:port`, `[v6]:port`, or `:port` (every address).
    static func hostAndPort(_ text: String) throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw ValidationError("--metrics-listen \(text): expected ADDR:PORT, e.g. 127.0.0.1:9464")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }
}
