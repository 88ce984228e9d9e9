import Archive
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import TLSFailure

/// One connection to the catalog's PostgreSQL server, used by one thread at a time, with the
/// blocking calls `CatalogStore` promises.
///
/// Not postgres-nio's `PostgresClient` pool: that needs a long-lived async `run()` task, and a
/// recbot makes one catalog write at a time (its writer queue is serial; a query command makes a
/// handful). One connection per process also keeps a fleet of hundreds of recbots within the
/// server's `max_connections`. A lost connection is reopened by the next call.
final class PostgresLink: @unchecked Sendable {
    let url: PostgresCatalogURL
    private let logger: Logger
    private let eventLoop: any EventLoop
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var nextConnectionID = 1
    /// A statement (or the connection attempt) that takes longer has hung: the connection is
    /// closed, so the writer can spool and the queries can fail with a clear message.
    let statementTimeout: TimeAmount
    /// For the query commands: every transaction on the connection is read-only, so a query
    /// cannot change the catalog whatever it runs.
    let readOnly: Bool

    init(url: PostgresCatalogURL, logger: Logger, readOnly: Bool = false, statementTimeout: TimeAmount = .seconds(30)) {
        self.url = url
        self.logger = logger
        self.readOnly = readOnly
        self.statementTimeout = statementTimeout
        eventLoop = MultiThreadedEventLoopGroup.singleton.any()
    }

    deinit {
        // No wait (the last reference may go on an event loop thread), but the connection
        // must live until it is closed: postgres-nio asserts that.
        if let connection { Self.close(connection) }
    }

    /// Runs `body` on the connection (opening it when needed), one caller at a time.
    @discardableResult
    func withConnection<T>(_ body: (Session) throws -> T) throws(CatalogError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            let session = Session(connection: try connected(), link: self)
            return try body(session)
        } catch {
            let mapped = mapError(error)
            if reconnects(after: error, mapped), let connection {
                self.connection = nil
                Self.close(connection)
            }
            throw mapped
        }
    }

    /// Runs `body` between BEGIN and COMMIT; any error rolls back (and is rethrown).
    func transaction<T>(_ body: (Session) throws -> T) throws(CatalogError) -> T {
        try withConnection { session in
            try session.execute("BEGIN")
            do {
                let value = try body(session)
                try session.execute("COMMIT")
                return value
            } catch {
                if !session.connection.isClosed { try? session.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// Closes without waiting, keeping the connection alive until it is closed (postgres-nio
    /// asserts that a connection is closed before it goes).
    static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    func close() {
        lock.withLock {
            if let connection { _ = try? connection.close().wait() }
            connection = nil
        }
    }

    private func connected() throws -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        let configuration = try connectionConfiguration()
        let id = nextConnectionID
        nextConnectionID += 1
        let opened = try PostgresConnection.connect(on: eventLoop, configuration: configuration, id: id, logger: logger).wait()
        if readOnly {
            _ = try Session(connection: opened, link: self).query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        }
        connection = opened
        return opened
    }

    private func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketPath = url.socketPath {
            configuration = .init(unixSocketPath: socketPath, username: url.username, password: url.password, database: url.database)
        } else {
            configuration = .init(host: url.host ?? "localhost", port: url.port, username: url.username, password: url.password,
                                  database: url.database, tls: try tls())
        }
        configuration.options.connectTimeout = .seconds(Int64(url.connectTimeoutSeconds))
        configuration.options.additionalStartupParameters = [("application_name", "recbot")]
        return configuration
    }

    /// libpq's sslmode: prefer and require encrypt without checking the certificate (as libpq
    /// does); verify-full checks the chain (against `sslrootcert` when given) and the host name.
    private func tls() throws -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch url.tls {
        case .disable:
            return .disable
        case .prefer, .require:
            tls.certificateVerification = .none
        case .verifyFull:
            tls.certificateVerification = .fullVerification
            if let path = url.rootCertificatePath { tls.trustRoots = .file(path) }
        }
        let context = try NIOSSLContext(configuration: tls)
        return url.tls == .prefer ? .prefer(context) : .require(context)
    }

    /// A statement on the open connection, bounded by `statementTimeout`.
    struct Session {
        let connection: PostgresConnection
        let link: PostgresLink

        @discardableResult
        func query(_ query: PostgresQuery) throws -> PostgresQueryResult {
            let connection = connection
            let seconds = link.statementTimeout.nanoseconds / 1_000_000_000
            let timedOut = CatalogError(path: link.url.redacted, reason: .unreachable("no answer in \(seconds) s"))
            // The wait ends at the deadline whatever the connection does: a query on a
            // connection that died under it is not always failed by postgres-nio.
            let result = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            let timer = connection.eventLoop.scheduleTask(in: link.statementTimeout) {
                result.fail(timedOut)
                PostgresLink.close(connection)
            }
            defer { timer.cancel() }
            connection.query(query, logger: link.logger).cascade(to: result)
            do {
                return try result.futureResult.wait()
            } catch let error as PSQLError where error.code == .clientClosedConnection {
                throw timedOut
            }
        }

        func execute(_ sql: String) throws {
            try query(PostgresQuery(unsafeSQL: sql))
        }

        /// Rows changed by an UPDATE/INSERT/DELETE.
        func changes(_ query: PostgresQuery) throws -> Int {
            try self.query(query).metadata.rows ?? 0
        }
    }

    // MARK: Errors

    /// A one-line reason that never carries the password (postgres-nio's own descriptions are
    /// generic on purpose; the details are read from the error's parts).
    func mapError(_ error: any Error) -> CatalogError {
        let location = url.redacted
        if let catalogError = error as? CatalogError { return catalogError }
        guard let psql = error as? PSQLError else {
            return CatalogError(path: location, reason: .unreachable(describe(error)))
        }
        switch psql.code {
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? "?"
            let message = psql.serverInfo?[.message] ?? "server error"
            let detail = psql.serverInfo?[.detail].map { " (\($0))" } ?? ""
            switch SQLStateClass(state) {
            case .credentials: return CatalogError(path: location, reason: .credentials(message))
            case .connectionLost: return CatalogError(path: location, reason: .unreachable("\(message) (SQLSTATE \(state))"))
            case .notNow: return CatalogError(path: location, reason: .unavailable("\(message) (SQLSTATE \(state))"))
            case .refused: return CatalogError(path: location, reason: .server("\(message)\(detail) (SQLSTATE \(state))"))
            }
        case .authMechanismRequiresPassword:
            return CatalogError(path: location, reason: .credentials("the server wants a password and the URL has none"))
        case .unsupportedAuthMechanism, .saslError:
            return CatalogError(path: location, reason: .credentials("authentication failed (\(psql.code))"))
        case .sslUnsupported:
            return CatalogError(path: location, reason: .unreachable("the server does not offer TLS and sslmode requires it"))
        default:
            return CatalogError(path: location, reason: .unreachable(psql.underlying.map(describe) ?? "\(psql.code)"))
        }
    }

    /// A lost connection is reopened by the next call; so is one to a server that turned
    /// read-only (a standby after a failover: a new connection may reach the new primary).
    private func reconnects(after error: any Error, _ mapped: CatalogError) -> Bool {
        if case .unreachable = mapped.reason { return true }
        let state = (error as? PSQLError)?.serverInfo?[.sqlState]
        return state == SQLStateClass.readOnlyTransaction
    }

    private func describe(_ error: any Error) -> String {
        if let tls = TLSFailure.describe(error, serverName: url.host ?? "localhost", trustHint: "sslrootcert= names a CA file") { return tls }
        if let connectError = error as? NIOConnectionError, let failure = connectError.connectionErrors.first {
            return "\(describe(failure.error)) (\(failure.target))"
        }
        if let ioError = error as? IOError { return String(cString: strerror(ioError.errnoCode)) }
        if let timeout = error as? ChannelError, case .connectTimeout(let amount) = timeout {
            return "connection timed out after \(amount.nanoseconds / 1_000_000_000) s"
        }
        return String(describing: error)
    }
}
