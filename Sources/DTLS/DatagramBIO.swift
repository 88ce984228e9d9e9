import COpenSSL
import COpenSSLShim

/// An OpenSSL BIO that keeps datagram boundaries in memory: one BIO_write is one outgoing
/// datagram, one BIO_read returns one incoming datagram. OpenSSL 3.0 (Debian 12) has no
/// BIO_s_dgram_mem, and a plain memory BIO would merge a flight into one oversized datagram.
final class DatagramBIO {
    /// Bounds what a misbehaving handshake can queue.
    static let maximumQueuedDatagrams = 64
    static let mtu = 1_200

    var incoming: [UInt8]?
    var outgoing: [[UInt8]] = []
    var overflowed = false

    /// Created once (Swift static initialisation is thread-safe) and only read afterwards.
    nonisolated(unsafe) private static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "recbot datagram") else { return nil }
        BIO_meth_set_write(method) { bio, data, length in
            guard let bio, let data, length >= 0 else { return -1 }
            let state = DatagramBIO.state(of: bio)
            guard state.outgoing.count < DatagramBIO.maximumQueuedDatagrams else {
                state.overflowed = true
                return -1
            }
            state.outgoing.append(Array(UnsafeRawBufferPointer(start: data, count: Int(length))))
            return length
        }
        BIO_meth_set_read(method) { bio, buffer, capacity in
            guard let bio, let buffer, capacity >= 0 else { return -1 }
            recbot_bio_clear_retry_flags(bio)
            let state = DatagramBIO.state(of: bio)
            guard let datagram = state.incoming else {
                recbot_bio_set_retry_read(bio)
                return -1
            }
            state.incoming = nil
            let count = min(Int(capacity), datagram.count)  // a truncated datagram fails the record MAC
            datagram.withUnsafeBytes { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress!, byteCount: count)
            }
            return Int32(count)
        }
        BIO_meth_set_ctrl(method) { bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: return 1
            case BIO_CTRL_DGRAM_QUERY_MTU, BIO_CTRL_DGRAM_GET_FALLBACK_MTU: return DatagramBIO.mtu
            case BIO_CTRL_PENDING:
                guard let bio else { return 0 }
                return DatagramBIO.state(of: bio).incoming.map { $0.count } ?? 0
            case BIO_CTRL_WPENDING: return 0
            default: return 0
            }
        }
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        return method
    }()

    /// A BIO bound to this state; the BIO holds the state unretained, the DTLS client owns both.
    func makeBIO() -> OpaquePointer? {
        guard let method = DatagramBIO.method, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        return bio
    }

    private static func state(of bio: OpaquePointer) -> DatagramBIO {
        Unmanaged<DatagramBIO>.fromOpaque(BIO_get_data(bio)).takeUnretainedValue()
    }
}
