import Foundation
import Glibc
import TestSupport

/// A throwaway PostgreSQL 15 server (Debian's `postgresql`) for the catalog tests: its own
/// cluster in a temporary directory, on a free loopback port, password authentication (SCRAM)
/// over TCP, fsync off. initdb refuses to run as root, so as root the cluster belongs to the
/// `postgres` user and its commands run through runuser.
///
/// It also speaks TLS, with a certificate for `localhost` (not for 127.0.0.1) from a throwaway
/// CA at `certificateAuthorityPath`; the role `tlsUser` may connect over TLS only.
public final class PostgresServer: @unchecked Sendable {
    public static let binaries = "/usr/lib/postgresql/15/bin"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binaries + "/initdb") }

    /// One server for a whole test process (each test makes its own database in it), stopped
    /// and removed when the process exits.
    public static let shared: Result<PostgresServer, any Error> = {
        let result = Result { try PostgresServer() }
        if case .success = result { atexit { if case .success(let server) = PostgresServer.shared { server.remove() } } }
        return result
    }()

    public let directory: String
    public let port: Int
    public let user = "recbot"
    public let password = "pw-\(UUID().uuidString.prefix(12))"
    /// A role pg_hba.conf admits over TLS only, with the same password.
    public let tlsUser = "tlsonly"
    /// A CA, and a server certificate it signs for DNS:localhost only (so verify-full to
    /// 127.0.0.1 must fail on the name).
    public let certificates: TestCertificates
    private let lock = NSLock()
    private var databases = 0

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-pg-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        certificates = try TestCertificates(directory: directory, subjectAltNames: ["DNS:localhost"])
        let passwordFile = directory + "/pw"
        try password.write(toFile: passwordFile, atomically: true, encoding: .utf8)
        if getuid() == 0 { try Self.shell("chown -R postgres: \(directory)") }
        try run("initdb", ["-D", directory + "/data", "-U", user, "--auth-local=trust", "--auth-host=scram-sha-256",
                           "--pwfile=\(passwordFile)", "--locale=C.UTF-8", "-E", "UTF8", "-N"])
        let rules = directory + "/data/pg_hba.conf"
        let existing = try String(contentsOfFile: rules, encoding: .utf8)
        try ("hostnossl all \(tlsUser) all reject\n" + existing).write(toFile: rules, atomically: true, encoding: .utf8)
        if getuid() == 0 { try Self.shell("chown -R postgres: \(directory)") }
        try start()
        try psql("CREATE ROLE \(tlsUser) LOGIN PASSWORD '\(password)'")
    }

    /// The CA that signs the server's certificate.
    public var certificateAuthorityPath: String { certificates.authorityPath }

    deinit { remove() }

    /// Stops the server and deletes its cluster.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The server's log, for a failing test's message.
    public var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }

    public func start() throws {
        try run("pg_ctl", ["-D", directory + "/data", "-l", directory + "/log", "-w", "-t", "30", "-o",
                           "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off -c max_connections=300 "
                           + "-c ssl=on -c ssl_cert_file=\(certificates.certificatePath) -c ssl_key_file=\(certificates.keyPath)", "start"])
    }

    /// Stops the server at once (connections are cut, as when a database host goes away).
    public func stop() {
        _ = try? run("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
    }

    /// A new, empty database, and the URL recbot takes for it.
    public func makeDatabase() throws -> String {
        url(database: try makeDatabase(owner: user))
    }

    /// A new, empty database that `owner` owns (and may migrate); its name.
    public func makeDatabase(owner: String) throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "t\(databases)_\(UUID().uuidString.prefix(6).lowercased())"
        }
        try psql("CREATE DATABASE \(name) OWNER \(owner)")
        return name
    }

    public func url(database: String, password: String? = nil) -> String {
        "postgres://\(user):\(password ?? self.password)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Runs SQL as the superuser over the Unix socket; returns psql's unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        try run("psql", ["-X", "-q", "-A", "-t", "-h", directory, "-p", "\(port)", "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1", "-c", sql])
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        let asPostgres = getuid() == 0
        let executable = asPostgres ? "/usr/sbin/runuser" : Self.binaries + "/" + tool
        let argv = asPostgres ? ["runuser", "-u", "postgres", "--", Self.binaries + "/" + tool] + arguments : [tool] + arguments
        // A file, not a pipe: the server pg_ctl starts inherits the output and would keep a
        // pipe open for ever.
        let outputPath = directory + "/\(tool)-\(UUID().uuidString.prefix(8)).out"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try Self.spawnAndWait(executable, argv, outputPath: outputPath)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        guard status == 0 else { throw Failure(command: "\(tool) \(arguments.joined(separator: " "))", output: text) }
        return text
    }

    /// posix_spawn and waitpid: Foundation's Process sometimes misses the exit of a child whose
    /// own child daemonizes (pg_ctl start), and waits for ever.
    private static func spawnAndWait(_ executable: String, _ argv: [String], outputPath: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o666)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pid: pid_t = 0
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        let spawned = posix_spawn(&pid, executable, &actions, nil, &cArguments, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(.ECHILD) }
        }
        // WIFEXITED / WEXITSTATUS, spelled out (the C macros do not import).
        return (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    private static func shell(_ command: String) throws {
        _ = try spawnAndWait("/bin/sh", ["sh", "-c", command], outputPath: "/dev/null")
    }

    public struct Failure: Error, CustomStringConvertible {
        public var command: String
        public var output: String
        public var description: String { "\(command) failed: \(output)" }
    }

    public static func freePort() throws -> Int { try freeLoopbackPort() }
}

/// Runs `body` on `count` threads at once and waits for all: for "many recbots at the same
/// moment" without tying up Swift Testing's cooperative threads with blocking catalog calls.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let group = DispatchGroup()
    let lock = NSLock()
    nonisolated(unsafe) var errors: [any Error] = []
    for index in 0..<count {
        group.enter()
        Thread {
            do { try body(index) } catch { lock.withLock { errors.append(error) } }
            group.leave()
        }.start()
    }
    group.wait()
    if let first = errors.first { throw first }
}
