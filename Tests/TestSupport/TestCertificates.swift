import Foundation
import Glibc

/// A throwaway CA and a server certificate it signs, made with openssl for a test server that
/// speaks TLS (PostgreSQL, S3): clients trust the CA's file, never the system's store.
public struct TestCertificates: Sendable {
    public let authorityPath: String
    public let certificatePath: String
    public let keyPath: String

    /// `subjectAltNames`: openssl's form, e.g. ["DNS:localhost", "IP:127.0.0.1"]. The key is
    /// readable by its owner only (servers refuse others).
    public init(directory: String, subjectAltNames: [String]) throws {
        authorityPath = directory + "/ca.pem"
        certificatePath = directory + "/server.pem"
        keyPath = directory + "/server.key"
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try Self.openssl(["req", "-x509"] + newKey + ["-days", "2", "-subj", "/CN=recbot test CA", "-keyout", directory + "/ca.key", "-out", authorityPath])
        try Self.openssl(["req"] + newKey + ["-subj", "/CN=recbot test server", "-keyout", keyPath, "-out", directory + "/server.csr"])
        let extensions = directory + "/server.ext"
        try "subjectAltName=\(subjectAltNames.joined(separator: ","))\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl(["x509", "-req", "-in", directory + "/server.csr", "-CA", authorityPath, "-CAkey", directory + "/ca.key",
                          "-CAcreateserial", "-days", "2", "-extfile", extensions, "-out", certificatePath])
        guard chmod(keyPath, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM) }
    }

    private static func openssl(_ arguments: [String]) throws {
        try runChecked(["/usr/bin/openssl"] + arguments)
    }
}
