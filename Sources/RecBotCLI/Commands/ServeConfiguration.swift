import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import NIOSSL
import ServiceCore

/// `recbot serve`'s flags and settings, checked before anything listens: a service that
/// starts with a typo in its rules or no credentials fails at once, not at its first webhook.
struct ServeConfiguration {
    struct Address {
        var host: String
        var port: Int
    }

    var listen: Address
    var rules: RecordingRules
    var capacity: Int
    /// Publishers this worker's recordings may take in all (nil: recordings alone count).
    var publisherCapacity: Int?
    var leaseMilliseconds: Int64
    /// How often the retention pass runs (nil: never).
    var pruneEveryMilliseconds: Int64?
    var webhookAuthentication: RequestAuthentication
    var apiAuthentication: RequestAuthentication
    /// The web archive: its own basic-auth user, or the API's token.
    var webAuthentication: RequestAuthentication
    var tls: TLSConfiguration?

    static let defaultWebhookSecretHeader = "x-recbot-webhook-secret"
    static let maximumRulesBytes = 1 << 20

    init(command: ServeCommand, settings: Settings) throws {
        listen = try Self.address(command.listen ?? settings[.serveListen] ?? "127.0.0.1:8480")
        rules = try Self.rules(path: command.rules ?? settings[.serveRules])
        let capacityText = command.capacity.map(String.init) ?? settings[.serveCapacity] ?? "4"
        guard let capacity = Int(capacityText), (0...1_000).contains(capacity) else {
            throw ValidationError("--capacity (\(SettingName.serveCapacity.variable)) must be a number from 0 to 1000, not \(capacityText.prefix(20))")
        }
        self.capacity = capacity
        if let text = command.capacityPublishers.map(String.init) ?? settings[.serveCapacityPublishers] {
            guard let budget = Int(text), (1...100_000).contains(budget) else {
                throw ValidationError("--capacity-publishers (\(SettingName.serveCapacityPublishers.variable)) must be a number from 1 to 100000, not \(text.prefix(20))")
            }
            publisherCapacity = budget
        }
        leaseMilliseconds = try settings.duration(command.lease, .serveLease, range: 2_000...600_000) ?? 10_000
        if command.pruneEvery?.milliseconds == 0 || settings[.servePruneEvery] == "0" {
            pruneEveryMilliseconds = nil
        } else {
            pruneEveryMilliseconds = try settings.duration(command.pruneEvery, .servePruneEvery, range: 1_000...86_400_000) ?? 3_600_000
        }
        var webhookMethods: [RequestAuthentication.Method] = []
        if let secret = settings[.serveWebhookSecret], !secret.isEmpty {
            let header = (settings[.serveWebhookSecretHeader] ?? Self.defaultWebhookSecretHeader).lowercased()
            webhookMethods.append(.header(name: header, secret: secret))
        }
        if let method = try Self.basicAuth(settings, .serveWebhookBasicAuth) { webhookMethods.append(method) }
        webhookAuthentication = RequestAuthentication(webhookMethods)
        let token = settings[.serveAPIToken] ?? ""
        apiAuthentication = RequestAuthentication(token.isEmpty ? [] : [.bearer(token: token)])
        webAuthentication = RequestAuthentication((try Self.basicAuth(settings, .serveWebBasicAuth).map { [$0] } ?? []) + apiAuthentication.methods)
        // On loopback the web archive is open to this host's users, so a service with no
        // credentials is still an archive browser; elsewhere it must let someone in.
        guard !webhookAuthentication.isEmpty || !apiAuthentication.isEmpty || !webAuthentication.isEmpty || listensOnLoopback else {
            throw ValidationError("""
                recbot serve lets nobody in without credentials: set \(SettingName.serveWebhookSecret.variable) or \
                \(SettingName.serveWebhookBasicAuth.variable) for Sora's webhooks, \(SettingName.serveAPIToken.variable) for the API, \
                or \(SettingName.serveWebBasicAuth.variable) for the web archive
                """)
        }
        tls = try Self.tls(certificate: command.tlsCertificate ?? settings[.serveTLSCertificate], key: command.tlsKey ?? settings[.serveTLSKey],
                           clientCA: command.tlsClientCA ?? settings[.serveTLSClientCA])
    }

    /// 127.0.0.0/8, ::1 or localhost: only this host can connect.
    var listensOnLoopback: Bool {
        let host = listen.host.lowercased()
        return host == "localhost" || host == "::1" || (host.hasPrefix("127.") && host.split(separator: ".").count == 4 && host.split(separator: ".").allSatisfy { UInt8($0) != nil })
    }

    /// The web archive needs no credentials: on loopback, unless its own user is configured
    /// (the API token alone does not close it: a browser cannot send one).
    var webIsOpen: Bool { listensOnLoopback && !webAuthentication.methods.contains { if case .basic = $0 { true } else { false } } }

    static func basicAuth(_ settings: Settings, _ name: SettingName) throws -> RequestAuthentication.Method? {
        guard let pair = settings[name] else { return nil }
        guard let colon = pair.firstIndex(of: ":"), colon != pair.startIndex else {
            throw ValidationError("\(name.variable) must be user:password")
        }
        return .basic(user: String(pair[..<colon]), password: String(pair[pair.index(after: colon)...]))
    }

    func serverBuilder() throws -> HTTPServerBuilder {
        guard let tls else { return .http1() }
        return try .tls(.http1(), tlsConfiguration: tls)
    }

    /// `host:port` or `[v6]:port`.
    static func address(_ text: String) throws -> Address {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65_535).contains(port) else {
            throw ValidationError("--listen \(text.prefix(60)) is not host:port")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("--listen \(text.prefix(60)) has no host") }
        return Address(host: host, port: port)
    }

    static func rules(path: String?) throws -> RecordingRules {
        guard let path else { return RecordingRules(rules: []) }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw ValidationError("cannot read the rules file \(path)") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumRulesBytes + 1)) ?? nil
        guard let data, data.count <= maximumRulesBytes else { throw ValidationError("the rules file \(path) is empty, unreadable or over 1 MiB") }
        do { return try RecordingRules(json: Array(data)) } catch { throw ValidationError("\(path): \(error)") }
    }

    static func tls(certificate: String?, key: String?, clientCA: String?) throws -> TLSConfiguration? {
        guard let certificate else {
            if key != nil || clientCA != nil { throw ValidationError("--tls-key and --tls-client-ca need --tls-cert") }
            return nil
        }
        guard let key else { throw ValidationError("--tls-cert needs --tls-key") }
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
            var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            if let clientCA {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCA))
                configuration.certificateVerification = .noHostnameVerification
            }
            return configuration
        } catch {
            throw ValidationError("TLS: cannot load \(certificate), \(key)\(clientCA.map { " or \($0)" } ?? ""): \(error)")
        }
    }
}
