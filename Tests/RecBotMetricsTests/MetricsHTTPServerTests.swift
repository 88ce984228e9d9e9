import Foundation
import Glibc
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOPosix
import Prometheus
import Testing
@testable import RecBotMetrics

/// The metrics endpoint in front of whoever can reach it: a client that never finishes its
/// request, too many clients, and a client that pipelines requests without reading answers.
@Suite struct MetricsHTTPServerTests {
    static func server(_ limits: MetricsServerLimits) async throws -> MetricsHTTPServer {
        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(descriptor: MetricNameDescriptor(namespace: "recbot", metricName: "test", unitName: "total", helpText: "")).increment()
        return try await MetricsHTTPServer.start(host: "127.0.0.1", port: 0, registry: registry, group: MultiThreadedEventLoopGroup.singleton,
                                                 limits: limits)
    }

    /// A TCP connection to the server, blocking, with a receive timeout.
    final class Client {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        }

        deinit { close(fd) }

        func send(_ text: String) { _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }

        /// Everything until the server closes, or nil when it is still open after `seconds`.
        func readUntilClosed(within seconds: Double) -> String? {
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return String(decoding: received, as: UTF8.self) }
                received += buffer[0..<count]
            }
            return nil
        }
    }

    /// Slowloris: a request that never ends holds its connection only until the deadline.
    @Test func aRequestThatNeverEndsIsClosedAtItsDeadline() async throws {
        var limits = MetricsServerLimits()
        limits.requestDeadline = .milliseconds(500)
        let server = try await Self.server(limits)
        let client = try Client(port: server.port)
        client.send("GET /metr")
        #expect(client.readUntilClosed(within: 5) != nil, "closed by the server")
        // A keep-alive client is answered, and closed once idle past the deadline.
        let scraper = try Client(port: server.port)
        scraper.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = scraper.readUntilClosed(within: 5)
        #expect(answer?.contains("recbot_test_total 1") == true)
        await server.close()
    }

    /// Polls `condition` for up to 10 s.
    /// Polls on the wall clock, not on Swift's cooperative pool (which the suite's blocking tests
    /// can hold for minutes on two cores); true when it held within two minutes.
    @discardableResult
    static func waitUntil(_ condition: () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(120)
        while !condition() {
            guard Date() < deadline else { return false }
            usleep(20_000)
        }
        return true
    }

    /// Past the cap, the oldest idle connection makes room for the new one; only when every
    /// connection has a request under way is a new one closed at once.
    @Test func atTheCapTheOldestIdleConnectionMakesRoom() async throws {
        var limits = MetricsServerLimits()
        limits.maximumConnections = 4
        // Held connections must outlive a test that a loaded machine starves for minutes (CI
        // once took 300 s); the default 10 s deadline closed them and let the fifth in.
        limits.requestDeadline = .seconds(3_600)
        let server = try await Self.server(limits)
        let held = try (0..<4).map { _ in try Client(port: server.port) }
        // The server accepts them in its own time (a loaded CI machine took over 200 ms).
        #expect(try await Self.waitUntil { server.openConnections == 4 })
        let next = try Client(port: server.port)
        next.send("GET /metrics HTTP/1.0\r\n\r\n")
        #expect(next.readUntilClosed(within: 60)?.contains("200 OK") == true, "served")
        // The oldest idle one was closed for it (which was accepted first is the server's choice).
        var closed = Set<Int>()
        try await Self.waitUntil {
            for (index, client) in held.enumerated() where !closed.contains(index) && client.readUntilClosed(within: 0.05) == "" { closed.insert(index) }
            return !closed.isEmpty
        }
        usleep(500_000)
        for (index, client) in held.enumerated() where !closed.contains(index) && client.readUntilClosed(within: 0.05) == "" { closed.insert(index) }
        #expect(closed.count == 1, "one held connection made room: \(closed)")
        // Every connection busy (a request's headers in, its body still coming): refused.
        let busy = try (0..<4).map { _ in try Client(port: server.port) }
        #expect(try await Self.waitUntil { server.openConnections == 4 })
        for client in busy { client.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n") }
        usleep(1_000_000)  // the server reads the heads on its own loops
        let refused = try Client(port: server.port)
        refused.send("GET /metrics HTTP/1.0\r\n\r\n")
        #expect(refused.readUntilClosed(within: 60) == "", "closed without an answer")
        await server.close()
    }

    /// Issue 39 item 9: 300 connections held open without a request (cap 32) do not keep a
    /// scrape out.
    @Test func aScrapeIsServedWhileHundredsOfIdleConnectionsAreHeld() async throws {
        var limits = MetricsServerLimits()
        limits.requestDeadline = .seconds(3_600)
        let server = try await Self.server(limits)
        let held = try (0..<300).map { _ in try Client(port: server.port) }
        #expect(try await Self.waitUntil { server.openConnections == limits.maximumConnections })
        usleep(1_000_000)  // let the server take every one it will
        let scrape = try Client(port: server.port)
        scrape.send("GET /metrics HTTP/1.0\r\n\r\n")
        #expect(scrape.readUntilClosed(within: 60)?.contains("200 OK") == true)
        #expect(server.openConnections <= limits.maximumConnections)
        _ = held
        await server.close()
    }

    /// A client that pipelines requests and reads nothing: no answer is written while the last
    /// ones wait in the buffer, so the pipelining handler reads no more and memory stays bounded.
    @Test func pipelinedRequestsAreNotAnsweredWhileTheClientDoesNotRead() throws {
        let registry = PrometheusCollectorRegistry()
        registry.makeCounter(descriptor: MetricNameDescriptor(namespace: "recbot", metricName: "test", unitName: "total", helpText: "")).increment()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
        try channel.pipeline.syncOperations.addHandler(MetricsHTTPHandler(registry: registry, limits: MetricsServerLimits(),
                                                                                  connections: ConnectionTable(limit: 1)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        channel.isWritable = false
        let requests = String(repeating: "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", count: 100)
        try channel.writeInbound(ByteBuffer(string: requests))
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing answered while the client does not read")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        var answers = 0
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            answers += String(buffer: buffer).components(separatedBy: "HTTP/1.1 200 OK").count - 1
        }
        #expect(answers == 100)
        _ = try? channel.finish()
    }
}
