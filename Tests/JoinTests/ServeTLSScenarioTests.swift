import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import TestSupport
import Archive
import Testing

/// `recbot serve --tls-cert --tls-key --tls-client-ca` (issue 43): HTTPS, and mutual TLS — a
/// client without a certificate from the configured CA does not get through the handshake,
/// whatever secret or token it carries.
@Suite struct ServeTLSScenarioTests {
    /// A client certificate signed by the CA at `authority` (its key beside it, as TestCertificates leaves it).
    static func clientCertificate(_ directory: String, authority: String, authorityKey: String, name: String) throws -> (certificate: String, key: String) {
        let (certificate, key, request) = (directory + "/\(name).pem", directory + "/\(name).key", directory + "/\(name).csr")
        _ = try runChecked(["/usr/bin/openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)",
                            "-keyout", key, "-out", request])
        _ = try runChecked(["/usr/bin/openssl", "x509", "-req", "-in", request, "-CA", authority, "-CAkey", authorityKey, "-CAcreateserial",
                            "-days", "2", "-out", certificate])
        return (certificate, key)
    }

    /// A request over TLS, trusting `authority`, presenting `client` if given; the status, or the error.
    static func request(port: Int, authority: String, client: (certificate: String, key: String)?, path: String,
                        headers: [String: String] = [:], method: HTTPMethod = .GET, body: String? = nil) -> Result<Int, any Error> {
        do {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(authority)
            if let client {
                tls.certificateChain = try NIOSSLCertificate.fromPEMFile(client.certificate).map { .certificate($0) }
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: client.key, format: .pem))
            }
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
            defer { try? http.syncShutdown() }
            var request = try HTTPClient.Request(url: "https://localhost:\(port)\(path)", method: method)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .string(body) }
            return .success(Int(try http.execute(request: request, deadline: .now() + .seconds(10)).wait().status.code))
        } catch {
            return .failure(error)
        }
    }

    @Test func onlyClientsWithACertificateFromTheConfiguredCAGetThrough() async throws {
        try await blocking {
            let scenario = try Scenario(serverArguments: ["--publisher", "vp8"])
            defer { scenario.stop() }
            let directory = scenario.directory.appendingPathComponent("tls").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let server = try TestCertificates(directory: directory, subjectAltNames: ["DNS:localhost", "IP:127.0.0.1"])
            let trusted = try Self.clientCertificate(directory, authority: server.authorityPath, authorityKey: directory + "/ca.key", name: "sora")
            let strangers = directory + "/strangers"
            try FileManager.default.createDirectory(atPath: strangers, withIntermediateDirectories: true)
            let other = try TestCertificates(directory: strangers, subjectAltNames: ["DNS:localhost"])
            let stranger = try Self.clientCertificate(strangers, authority: other.authorityPath, authorityKey: strangers + "/ca.key", name: "stranger")

            let serve = try ServeProcess(scenario: scenario, arguments: [
                "--tls-cert", server.certificatePath, "--tls-key", server.keyPath, "--tls-client-ca", server.authorityPath,
            ])
            defer { serve.stop() }
            let hook = ServeScenarioTests.sessionWebhook("session.created", channel: "nomatch", session: "TLS1")
            let secret = ["x-recbot-webhook-secret": ServeProcess.webhookSecret, "content-type": "application/json"]
            #expect(try Self.request(port: serve.port, authority: server.authorityPath, client: trusted, path: "/healthz").get() == 200)
            #expect(try Self.request(port: serve.port, authority: server.authorityPath, client: trusted, path: "/webhooks/sora", headers: secret,
                                     method: .POST, body: hook).get() == 200)
            #expect(try Self.request(port: serve.port, authority: server.authorityPath, client: trusted, path: "/webhooks/sora",
                                     method: .POST, body: hook).get() == 401, "mTLS adds to the secret, it does not replace it")
            for (client, who) in [(nil, "no certificate"), (stranger, "a certificate from another CA")] as [((certificate: String, key: String)?, String)] {
                let refused = Self.request(port: serve.port, authority: server.authorityPath, client: client, path: "/webhooks/sora", headers: secret,
                                           method: .POST, body: hook)
                #expect(throws: (any Error).self, "\(who) got through") { try refused.get() }
            }
            #expect(throws: (any Error).self, "plain HTTP to the TLS port") { try serve.request("GET", "/healthz") }
            #expect(try scenario.catalog().jobs(JobFilter()).isEmpty, "no rule matched: nothing queued by any of it")
        }
    }
}
