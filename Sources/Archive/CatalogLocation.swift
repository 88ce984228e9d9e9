import Foundation

/// Which catalog a command uses: the SQLite file in the data directory (the default), another
/// SQLite file, or a PostgreSQL database that many recbots share.
public enum CatalogLocation: Sendable, Equatable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresCatalogURL)

    /// `postgres://…` or `postgresql://…` selects PostgreSQL; anything without a scheme is
    /// the path of an SQLite file.
    public static func parse(_ text: String) throws(CatalogError) -> CatalogLocation {
        let lowered = text.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return .postgres(try PostgresCatalogURL(parsing: text))
        }
        if let colon = text.firstIndex(of: ":"), text[text.startIndex..<colon].allSatisfy({ $0.isLetter || $0 == "+" }),
           text[colon...].hasPrefix("://") {
            throw CatalogError(path: String(text[..<colon]) + "://…", reason: .badLocation("unsupported catalog URL scheme; use postgres://user@host/db or a file path"))
        }
        guard !text.isEmpty else { throw CatalogError(path: text, reason: .badLocation("empty catalog location")) }
        return .sqlite(path: text)
    }

    /// The location for messages and logs: never a password.
    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): url.redacted
        }
    }
}

/// A libpq-style connection URL: `postgres://user:password@host:port/database?sslmode=require`.
/// postgres-nio has no URL parser, so this is ours. The password is kept out of `description`
/// and of everything that logs or stores the location.
public struct PostgresCatalogURL: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// libpq's sslmode values recbot supports (verify-ca is treated as verify-full: the server
    /// name is always checked when the certificate is).
    public enum TLSMode: String, Sendable, Equatable {
        case disable, prefer, require
        case verifyFull = "verify-full"
    }

    public var username: String
    public var password: String?
    /// A host name or IP address; nil with `socketPath`.
    public var host: String?
    public var port: Int
    /// A Unix socket (`?host=/run/postgresql`): the directory, as libpq takes it.
    public var socketDirectory: String?
    public var database: String
    public var tls: TLSMode
    /// A CA file (PEM) to check the server's certificate with (`?sslrootcert=`).
    public var rootCertificatePath: String?
    public var connectTimeoutSeconds: Int

    public init(parsing text: String) throws(CatalogError) {
        // Only the scheme: a URL that does not parse may have its password anywhere (a "/" or
        // "?" in it moves the split), so no part of it, and no reason quoting it, is printed.
        let fail = { (why: String) -> CatalogError in CatalogError(path: PostgresCatalogURL.scheme(of: text), reason: .badLocation(why)) }
        guard let schemeEnd = text.range(of: "://") else { throw fail("not a postgres:// URL") }
        var rest = Substring(text[schemeEnd.upperBound...])
        var query = Substring("")
        if let mark = rest.firstIndex(of: "?") { query = rest[rest.index(after: mark)...]; rest = rest[..<mark] }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") { path = rest[rest.index(after: slash)...]; rest = rest[..<slash] }
        var userInfo: Substring?
        if let at = rest.lastIndex(of: "@") { userInfo = rest[..<at]; rest = rest[rest.index(after: at)...] }

        username = ""
        if let userInfo {
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = parts[0].removingPercentEncoding else { throw fail("bad percent-encoding in the user name") }
            username = user
            if parts.count == 2 {
                guard let secret = parts[1].removingPercentEncoding else { throw fail("bad percent-encoding in the password") }
                password = secret
            }
        }
        (host, port) = try Self.hostAndPort(rest, fail: fail)
        guard let name = path.removingPercentEncoding else { throw fail("bad percent-encoding in the database name") }
        tls = .prefer
        connectTimeoutSeconds = 10
        database = name
        try applyQuery(query, fail: fail)
        guard !username.isEmpty else { throw fail("the URL names no user (postgres://user@host/database)") }
        if database.isEmpty { database = username }
        guard host != nil || socketDirectory != nil else { throw fail("the URL names no host") }
    }

    private static func hostAndPort(_ text: Substring, fail: (String) -> CatalogError) throws(CatalogError) -> (String?, Int) {
        var hostPart = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw fail("unclosed [ in the host") }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { throw fail("junk after the IPv6 host") }
        } else if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        var port = 5432
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else { throw fail("the port is not a number from 1 to 65535") }
            port = value
        }
        guard let host = hostPart.removingPercentEncoding else { throw fail("bad percent-encoding in the host") }
        return (host.isEmpty ? nil : host, port)
    }

    private mutating func applyQuery(_ query: Substring, fail: (String) -> CatalogError) throws(CatalogError) {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let value = parts[1].removingPercentEncoding else { throw fail("a URL parameter is not name=value (percent-encoded)") }
            switch parts[0] {
            case "sslmode":
                if value == "verify-ca" { tls = .verifyFull; continue }
                guard let mode = TLSMode(rawValue: value) else { throw fail("sslmode must be disable, prefer, require, verify-ca or verify-full") }
                tls = mode
            case "sslrootcert": rootCertificatePath = value
            case "connect_timeout":
                guard let seconds = Int(value), (1...600).contains(seconds) else { throw fail("connect_timeout must be 1…600 seconds") }
                connectTimeoutSeconds = seconds
            case "host":
                if value.hasPrefix("/") { socketDirectory = value; host = nil } else { host = value }
            case "port":
                guard let number = Int(value), (1...65_535).contains(number) else { throw fail("port= is not a number from 1 to 65535") }
                port = number
            case "user": username = value
            case "password": password = value
            case "dbname": database = value
            case "application_name": continue
            default: throw fail("a URL parameter is not one recbot supports (sslmode, sslrootcert, connect_timeout, host, port, user, password, dbname, application_name)")
            }
        }
    }

    /// The Unix socket file, as PostgreSQL names it inside the socket directory.
    public var socketPath: String? { socketDirectory.map { "\($0)/.s.PGSQL.\(port)" } }

    /// `postgres://user@host:port/database`: what logs, errors and `sessions` may show.
    public var redacted: String {
        let where_ = host.map { $0.contains(":") ? "[\($0)]" : $0 } ?? ""
        var text = "postgres://\(username)@\(where_):\(port)/\(database)"
        if let socketDirectory { text += "?host=\(socketDirectory)" }
        return text
    }

    public var description: String { redacted }
    public var debugDescription: String { redacted }

    /// What a message may show of a URL that did not parse: `postgres://…`.
    static func scheme(of text: String) -> String {
        guard let schemeEnd = text.range(of: "://") else { return "postgres://…" }
        return text[..<schemeEnd.upperBound].lowercased() + "…"
    }
}
