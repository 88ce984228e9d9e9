import CDatagramSocket
import Glibc
import STUN
import Synchronization

/// A UDP socket of recbot's own: read by a `DatagramReader` on a thread of its own, written
/// by the core's loop without waiting. SwiftNIO's datagram channel was the socket side before:
/// its per-datagram envelope, pipeline and epoll round trip cost as much as the read itself
/// (a third of recbot's CPU with 256 audio publishers, `perf`), and it closed the socket on a
/// failed send (a firewall's EPERM during an outage), which here only loses that datagram.
final class DatagramSocket: Sendable {
    let fd: Int32
    let local: TransportAddress
    /// Set once the descriptor is closed: a send after it must not reach a reused number.
    private let closed = Atomic<Bool>(false)

    private init(fd: Int32, local: TransportAddress) { (self.fd, self.local) = (fd, local) }

    /// Binds an ephemeral port on `ip`.
    static func open(_ ip: IPAddress, receiveBufferBytes: Int) throws(DatagramSocketError) -> DatagramSocket {
        var address = recbot_datagram_address(ip, port: 0)
        let fd = recbot_datagram_open(&address, Int32(clamping: receiveBufferBytes))
        guard fd >= 0 else { throw DatagramSocketError(operation: "bind", address: "\(ip)", errno: -fd) }
        guard let local = TransportAddress(address) else {
            Glibc.close(fd)
            throw DatagramSocketError(operation: "bind", address: "\(ip)", errno: EAFNOSUPPORT)
        }
        return DatagramSocket(fd: fd, local: local)
    }

    /// Sends without waiting; a full send buffer or an unreachable network loses this datagram
    /// only (UDP's own contract: the protocols above retransmit what matters).
    func send(_ bytes: [UInt8], to remote: TransportAddress) -> Result<Void, DatagramSocketError> {
        guard !closed.load(ordering: .acquiring) else { return .failure(DatagramSocketError(operation: "send", address: "\(remote)", errno: EBADF)) }
        var address = recbot_datagram_address(remote.ip, port: remote.port)
        let result = bytes.withUnsafeBufferPointer { recbot_datagram_send(fd, $0.baseAddress, $0.count, &address) }
        return result == 0 ? .success(()) : .failure(DatagramSocketError(operation: "send", address: "\(remote)", errno: -result))
    }

    /// The receive buffer the kernel granted (Linux reports twice the usable size).
    func grantedReceiveBufferBytes() -> Int? {
        let granted = recbot_datagram_receive_buffer(fd)
        return granted >= 0 ? Int(granted) : nil
    }

    /// Has the kernel drop the paused streams' new pictures (`PausedVideoFilter`), as many
    /// streams as it takes starting from `maximumStreams` (halved while it answers ENOMEM); no
    /// streams removes the filter. Returns how many streams the attached program covers.
    func filterPausedVideo(_ boundaries: [UInt32: UInt32],
                           maximumStreams: Int = PausedVideoFilter.maximumStreams) -> Result<Int, DatagramSocketError> {
        var covered = min(maximumStreams, boundaries.count)
        while true {
            switch setFilter(PausedVideoFilter.program(boundaries: boundaries, maximumStreams: covered)) {
            case .success: return .success(covered)
            case .failure(let error) where error.errno == ENOMEM && covered > 8: covered /= 2
            case .failure(let error): return .failure(error)
            }
        }
    }

    /// Replaces the socket's filter (`PausedVideoFilter`); an empty program removes it.
    func setFilter(_ program: [PausedVideoFilter.Instruction]) -> Result<Void, DatagramSocketError> {
        guard !closed.load(ordering: .acquiring) else { return .failure(DatagramSocketError(operation: "filter", address: "\(local)", errno: EBADF)) }
        let instructions = program.map { recbot_filter_instruction(code: $0.code, jt: $0.jt, jf: $0.jf, k: $0.k) }
        let result = instructions.withUnsafeBufferPointer { recbot_datagram_set_filter(fd, $0.baseAddress, UInt16(clamping: $0.count)) }
        return result == 0 ? .success(()) : .failure(DatagramSocketError(operation: "filter", address: "\(local)", errno: -result))
    }

    /// Wakes its reader, which then ends.
    func stopReading() { recbot_datagram_stop_reading(fd) }

    /// Closes the descriptor once (after its reader has ended).
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Glibc.close(fd)
    }
}

/// A socket call that failed, with the errno and the address it was for.
struct DatagramSocketError: Error, CustomStringConvertible {
    var operation: String
    var address: String
    var errno: Int32
    var description: String { "UDP \(operation) \(address): \(String(cString: strerror(errno))) (errno \(errno))" }
}

extension recbot_datagram_address {
    init(_ ip: IPAddress, port: UInt16) {
        self.init()
        self.port = port
        switch ip {
        case .v4(let a, let b, let c, let d):
            family = 4
            address.0 = a; address.1 = b; address.2 = c; address.3 = d
        case .v6(let bytes):
            family = 6
            withUnsafeMutableBytes(of: &address) { raw in
                for (index, byte) in bytes.prefix(16).enumerated() { raw[index] = byte }
            }
        }
    }
}

extension TransportAddress {
    /// From a read's source, without going through the address's text (this runs per datagram).
    init?(_ source: recbot_datagram_address) {
        switch source.family {
        case 4:
            self.init(ip: .v4(source.address.0, source.address.1, source.address.2, source.address.3), port: source.port)
        case 6:
            var raw = source.address
            let bytes = withUnsafeBytes(of: &raw) { Array($0) }
            self.init(ip: .v6(bytes), port: source.port)
        default:
            return nil
        }
    }
}
