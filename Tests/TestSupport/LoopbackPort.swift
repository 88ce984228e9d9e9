import Foundation
import Glibc
import Synchronization

/// A TCP port on 127.0.0.1 that nothing listens on right now, for a server a test starts.
///
/// The port lies below the kernel's ephemeral range. A port the kernel handed out (bind to 0)
/// could be handed out again to any outgoing connection before the server binds it, and was:
/// SeaweedFS's own gRPC clients took its S3 port once on a loaded CI machine. Nothing takes a
/// port below the range unless it asks for that port by number.
public func freeLoopbackPort() throws -> Int {
    let range = LoopbackPorts.candidates
    // A machine whose ephemeral range starts near 10,000 leaves nothing below it: take the
    // kernel's choice then, race and all.
    guard range.count > 1_000 else { return try kernelChosenPort() }
    for _ in 0..<200 {
        let port = Int.random(in: range)
        guard LoopbackPorts.claim(port) else { continue }
        if canBind(port) { return port }
    }
    throw POSIXError(.EADDRINUSE)
}

private enum LoopbackPorts {
    /// Ports a test in this process was already given, so two servers never share one.
    static let given = Mutex<Set<Int>>([])

    static func claim(_ port: Int) -> Bool { given.withLock { $0.insert(port).inserted } }

    /// From 10,000 up to the ephemeral range's start (32,768 by default on Linux).
    static let candidates: ClosedRange<Int> = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let low = text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
        return 10_000...max(10_001, low - 1)
    }()
}

private func kernelChosenPort() throws -> Int {
    guard let port = bindLoopback(port: 0) else { throw POSIXError(.EADDRINUSE) }
    return port
}

private func canBind(_ port: Int) -> Bool { bindLoopback(port: port) != nil }

/// Binds a TCP socket to 127.0.0.1:`port` (0: a port the kernel picks) and closes it again;
/// the port it was bound to, or nil when the bind failed.
private func bindLoopback(port: Int) -> Int? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}
