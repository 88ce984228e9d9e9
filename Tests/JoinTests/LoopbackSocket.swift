import Glibc

/// A TCP socket bound to an ephemeral port on 127.0.0.1 (listening when asked), for tests that
/// need a free port or an occupied one. The caller closes `descriptor`.
struct LoopbackSocket {
    let descriptor: Int32
    let port: Int

    init?(listening: Bool) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else {
            close(fd)
            return nil
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }
}
