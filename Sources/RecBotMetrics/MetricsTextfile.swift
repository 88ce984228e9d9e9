import Foundation
import Prometheus

/// The metrics as a file for node_exporter's textfile collector, for cron jobs too short-lived
/// to be scraped. The collector reads `*.prom` files whenever it is scraped, so the file is
/// replaced atomically: written beside itself (same directory, so the same filesystem), synced,
/// then renamed over the old one. A reader sees the old file or the new one, never half of one.
public struct MetricsTextfile: Sendable {
    public let path: String

    public enum Failure: Error, CustomStringConvertible {
        case notPromFile(String)
        case write(path: String, errno: Int32)

        public var description: String {
            switch self {
            case .notPromFile(let path): "\(path): node_exporter's textfile collector reads only files ending in .prom"
            case .write(let path, let code): "\(path): \(String(cString: strerror(code)))"
            }
        }
    }

    public init(path: String) throws(Failure) {
        guard path.hasSuffix(".prom") else { throw .notPromFile(path) }
        self.path = path
    }

    /// Writes the registry's current text (which ends in a newline and carries no timestamps,
    /// as the collector requires).
    public func write(_ registry: PrometheusCollectorRegistry) throws(Failure) {
        try write(bytes: registry.emitToBuffer())
    }

    func write(bytes: [UInt8]) throws(Failure) {
        let temporary = "\(path).tmp.\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .write(path: temporary, errno: errno) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let code = errno
                close(descriptor)
                unlink(temporary)
                throw .write(path: temporary, errno: code)
            }
            offset += written
        }
        let synced = fsync(descriptor) == 0 ? 0 : errno
        close(descriptor)
        guard synced == 0 else {
            unlink(temporary)
            throw .write(path: temporary, errno: synced)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw .write(path: path, errno: code)
        }
    }
}
