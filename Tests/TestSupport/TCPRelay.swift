import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on loopback to another local port, which a test can freeze: a network partition
/// as a client sees it. Its connections stay open and nothing passes either way (the client's
/// queries hang rather than fail), new connections are accepted and go nowhere, until `heal`.
/// Plain sockets and a thread per direction: a test's few connections, nothing to tune.
public final class TCPRelay: @unchecked Sendable {
    public let port: Int
    private let targetPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var frozen = false
    private var refusing = false
    private var closed = false
    private var sockets: [Int32] = []

    public init(targetPort: Int) throws {
        self.targetPort = targetPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 64) == 0 else { throw RelayError.cannotListen(String(cString: strerror(errno))) }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    public enum RelayError: Error { case cannotListen(String) }

    /// Nothing passes from now on, on any connection, old or new.
    public func freeze() { lock.withLock { frozen = true } }
    /// New connections are closed at once (a server that is down); old ones go on.
    public func refuse() { lock.withLock { refusing = true } }
    public func heal() { lock.withLock { (frozen, refusing) = (false, false) } }

    /// Closes every connection and stops accepting.
    public func close() {
        let all = lock.withLock { () -> [Int32] in
            closed = true
            defer { sockets = [] }
            return sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        for socket in all {
            shutdown(socket, Int32(SHUT_RDWR))
            Glibc.close(socket)
        }
    }

    private var isFrozen: Bool { lock.withLock { frozen } }
    private var isClosed: Bool { lock.withLock { closed } }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while !isClosed {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { if isClosed { return } else { continue } }
            if lock.withLock({ refusing }) {
                Glibc.close(client)
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: UInt16(targetPort))
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            guard connected else {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            lock.withLock { sockets += [client, upstream] }
            Thread.detachNewThread { [self] in pump(from: client, to: upstream) }
            Thread.detachNewThread { [self] in pump(from: upstream, to: client) }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !isClosed {
            if isFrozen {
                usleep(20_000)  // unread, the bytes wait in the kernel: the sender sees a silent peer
                continue
            }
            var poller = pollfd(fd: source, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 20) >= 0 else { break }
            guard poller.revents != 0, !isFrozen else { continue }
            let count = read(source, &buffer, buffer.count)
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                let written = buffer[sent..<count].withUnsafeBytes { write(destination, $0.baseAddress, $0.count) }
                guard written > 0 else { return }
                sent += written
            }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
