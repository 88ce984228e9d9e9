import NIOConcurrencyHelpers
import NIOCore
import PeerConnection
import STUN
import WireCoding

/// Datagrams read from the sockets and not yet handled by the peer connection core.
///
/// The sockets are read on their own thread, which does nothing else, so the kernel's receive
/// buffer (capped by `net.core.rmem_max`, 4 MiB or less on a fresh machine) empties even while
/// the core is busy with a burst. What the core has not reached waits here instead, in two
/// classes (RFC 7983 demultiplexing, by first byte):
/// - control: STUN (ICE consent), DTLS (the handshake and every data-channel message) and RTCP
///   (sender reports, feedback answers). Handled first, and the only class a full media backlog
///   never costs: a session overloaded by media still answers consent and keeps its messages.
/// - media: RTP. Bounded in bytes; past the bound a new packet is dropped and counted, so an
///   overload loses recent media (NACK and keyframe requests recover it within their budget)
///   instead of growing without end or starving control.
public final class ReceiveBacklog: Sendable {
    /// Media's bound holds about 30 s of 256 publishers' audio past capacity (video is paused
    /// then): at 48 MiB a quota of a quarter of what they need kept 79 % of the audio, at 128
    /// MiB 92 %. It is memory used only while recbot is behind.
    public struct Limits: Sendable {
        public var mediaBytes: Int
        public var controlBytes: Int
        public init(mediaBytes: Int = 128 << 20, controlBytes: Int = 8 << 20) {
            (self.mediaBytes, self.controlBytes) = (mediaBytes, controlBytes)
        }
    }

    public typealias Counters = ReceiveBacklogCounters

    public struct Datagram: Sendable {
        public var bytes: [UInt8]
        public var from: TransportAddress
        public var to: TransportAddress
        /// When the sockets' thread read it.
        public var arrival: MonotonicTime
    }

    /// What a `take` returned: the datagrams to handle now, and whether more wait.
    /// One datagram as a read left it in its slot (valid only during `push(read:to:arrival:)`).
    struct ReadDatagram {
        var bytes: UnsafeRawBufferPointer
        var from: TransportAddress
    }

    public struct Batch: Sendable {
        public var datagrams: [Datagram]
        public var more: Bool
        /// When the oldest media datagram taken was read: how far behind the core is.
        public var oldestMediaArrival: MonotonicTime?
    }

    /// Bytes counted per datagram beyond its payload (the array and the addresses).
    static let overheadBytes = 96

    private struct State {
        var control = CircularBuffer<Datagram>(initialCapacity: 64)
        var media = CircularBuffer<Datagram>(initialCapacity: 1_024)
        var controlBytes = 0
        var mediaBytes = 0
        var counters = Counters()
        /// A drain is scheduled (or running) on the core's loop: pushes need not wake it.
        var drainPending = false
        /// The core's paused video streams: their new pictures are dropped here, unread.
        var paused = PausedVideo()
    }

    public let limits: Limits
    private let state = NIOLockedValueBox(State())

    public init(limits: Limits = Limits()) { self.limits = limits }

    public var counters: Counters {
        state.withLockedValue { state in
            var counters = state.counters
            counters.waitingBytes = state.controlBytes + state.mediaBytes
            (counters.videoPacketsShed, counters.videoFramesShed) = (state.paused.shedPackets, state.paused.shedFrames)
            return counters
        }
    }

    /// Pauses and resumes follow the core's (`PeerConnectionCore.pausedVideoBoundaries`).
    public func followPausedVideo(_ boundaries: [UInt32: UInt32]) {
        state.withLockedValue { $0.paused.follow(boundaries) }
    }

    /// Adds what one read of a socket returned, under one lock: a paused video stream's new
    /// pictures are dropped before they are copied. True when the caller must schedule a drain.
    func push(read batch: [ReadDatagram], to: TransportAddress, arrival: MonotonicTime) -> Bool {
        state.withLockedValue { state in
            var wake = false
            for read in batch {
                let header = Self.rtpHeader(read.bytes)
                if let header, !state.paused.isEmpty, state.paused.sheds(ssrc: header.ssrc, timestamp: header.timestamp) { continue }
                let datagram = Datagram(bytes: Array(read.bytes), from: read.from, to: to, arrival: arrival)
                let isControl = header == nil && DatagramClass(firstBytes: datagram.bytes) == .control
                if Self.append(datagram, isControl: isControl, limits: limits, &state) { wake = true }
            }
            return wake
        }
    }

    /// The SSRC and timestamp of an RTP packet (not RTCP, not relayed), read in place.
    private static func rtpHeader(_ bytes: UnsafeRawBufferPointer) -> (ssrc: UInt32, timestamp: UInt32)? {
        guard bytes.count >= 12, (128...191).contains(bytes[0]), !(192...223).contains(bytes[1]) else { return nil }
        func word(at offset: Int) -> UInt32 {
            UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
        }
        return (word(at: 8), word(at: 4))
    }

    /// Adds a datagram read from a socket. True when the caller must schedule a drain (the
    /// backlog was idle); false when one is already pending, or the datagram was dropped.
    public func push(_ datagram: Datagram) -> Bool {
        let isControl = DatagramClass(firstBytes: datagram.bytes) == .control
        return state.withLockedValue { state in Self.append(datagram, isControl: isControl, limits: limits, &state) }
    }

    private static func append(_ datagram: Datagram, isControl: Bool, limits: Limits, _ state: inout State) -> Bool {
        let cost = datagram.bytes.count + Self.overheadBytes
        if isControl {
            guard state.controlBytes + cost <= limits.controlBytes else { state.counters.controlDropped += 1; return false }
            state.control.append(datagram)
            state.controlBytes += cost
        } else {
            guard state.mediaBytes + cost <= limits.mediaBytes else { state.counters.mediaDropped += 1; return false }
            state.media.append(datagram)
            state.mediaBytes += cost
        }
        state.counters.peakBytes = max(state.counters.peakBytes, state.controlBytes + state.mediaBytes)
        if state.drainPending { return false }
        state.drainPending = true
        return true
    }

    /// Every waiting control datagram, then up to `maxMedia` media ones. When `more` is false
    /// the backlog is idle again and the next push schedules the next drain.
    public func take(maxMedia: Int) -> Batch {
        state.withLockedValue { state in
            var taken: [Datagram] = []
            taken.reserveCapacity(state.control.count + min(maxMedia, state.media.count))
            while let datagram = state.control.popFirst() {
                state.controlBytes -= datagram.bytes.count + Self.overheadBytes
                taken.append(datagram)
            }
            var media = 0
            let oldestMediaArrival = state.media.first?.arrival
            while media < maxMedia, let datagram = state.media.popFirst() {
                state.mediaBytes -= datagram.bytes.count + Self.overheadBytes
                taken.append(datagram)
                media += 1
            }
            let more = !state.control.isEmpty || !state.media.isEmpty
            if !more { state.drainPending = false }
            return Batch(datagrams: taken, more: more, oldestMediaArrival: maxMedia > 0 ? oldestMediaArrival : nil)
        }
    }
}

/// RFC 7983's demultiplexing, reduced to what the backlog needs: which class a datagram is.
public enum DatagramClass: Equatable, Sendable {
    case control
    case media

    public init(firstBytes bytes: [UInt8]) { self = Self.classify(bytes, at: 0) }

    private static func classify(_ bytes: [UInt8], at start: Int) -> DatagramClass {
        guard start < bytes.count else { return .control }
        switch bytes[start] {
        case 128...191:
            // RTCP packet types 192-223 share RTP's first byte; RTP payload types (with the
            // marker bit) do not reach them (RFC 5761 section 4).
            guard start + 1 < bytes.count else { return .media }
            return (192...223).contains(bytes[start + 1]) ? .control : .media
        case 64...79 where start == 0:
            // TURN ChannelData (RFC 8656): the class of what its 4-byte header carries.
            return classify(bytes, at: 4)
        default:
            return .control
        }
    }
}
