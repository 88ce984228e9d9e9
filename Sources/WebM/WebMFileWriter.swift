import Glibc

public struct WebMFileError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var operation: String
    public var errno: Int32

    public var description: String {
        "\(operation) \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The thin I/O side of the muxer: applies `WebMWrite`s to a file with positioned writes.
/// Blocking; call it from a writer thread, never from a network event loop.
public final class WebMFileWriter {
    public let path: String
    private var descriptor: Int32
    public private(set) var length: UInt64 = 0

    /// Creates the file; fails if it already exists, so a recording is never overwritten.
    /// Its mode is 0666 less the process umask (recbot sets 027: owner and group only).
    public init(creatingAt path: String) throws(WebMFileError) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        if descriptor < 0 { throw WebMFileError(path: path, operation: "create", errno: errno) }
    }

    deinit {
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
    }

    public func apply(_ writes: [WebMWrite]) throws(WebMFileError) {
        for write in writes {
            switch write {
            case .append(let bytes):
                try writeAll(bytes, at: length)
                length += UInt64(bytes.count)
            case .overwrite(let offset, let bytes):
                try writeAll(bytes, at: offset)
            }
        }
    }

    /// Cuts the file back to `length` (after a failed write: the last whole append).
    public func truncate(toLength newLength: UInt64) throws(WebMFileError) {
        if ftruncate(descriptor, off_t(newLength)) != 0 { throw WebMFileError(path: path, operation: "truncate", errno: errno) }
        length = newLength
    }

    public func sync() throws(WebMFileError) {
        if fsync(descriptor) != 0 { throw WebMFileError(path: path, operation: "fsync", errno: errno) }
    }

    public func close() throws(WebMFileError) {
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        descriptor = -1
        if result != 0 { throw WebMFileError(path: path, operation: "close", errno: errno) }
    }

    private func writeAll(_ bytes: [UInt8], at offset: UInt64) throws(WebMFileError) {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                pwrite(descriptor, buffer.baseAddress! + written, buffer.count - written, off_t(offset) + off_t(written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw WebMFileError(path: path, operation: "write", errno: errno)
            }
            written += result
        }
    }
}
