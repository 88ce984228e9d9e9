import RTP
import WireCoding

/// Extends 16-bit RTP sequence numbers (or 32-bit timestamps) to 64 bits, relative to
/// the highest value seen, so wrap-around never reorders anything.
public struct SequenceUnwrapper: Sendable {
    private var highest: Int64?
    private let modulus: Int64

    public init(bits: Int) { modulus = Int64(1) << Int64(bits) }

    public mutating func unwrap(_ value: UInt32) -> Int64 {
        let value = Int64(value)
        guard let highest else {
            self.highest = value
            return value
        }
        var delta = (value - highest) % modulus
        if delta < 0 { delta += modulus }
        if delta >= modulus / 2 { delta -= modulus }  // older than highest
        let unwrapped = highest + delta
        if unwrapped > highest { self.highest = unwrapped }
        return unwrapped
    }
}

public struct AssemblerCounters: Equatable, Sendable {
    public var packets = 0
    public var duplicates = 0
    /// Packets that never arrived (sequence numbers skipped).
    public var lost = 0
    public var framesEmitted = 0
    /// Frames not written because a packet was missing, or while waiting for a keyframe.
    public var framesDropped = 0
    public var malformedFrames = 0
    public var keyframeRequests = 0

    public init() {}
}

public struct AssemblerOutput: Sendable {
    public var frames: [EncodedFrame] = []
    /// The receiver should ask the sender for a keyframe (RTCP PLI).
    public var requestKeyframe = false
}

/// Turns one RTP stream into complete frames: a bounded reorder buffer, loss detection,
/// and the rule that a frame with a missing packet is never emitted. Video then waits for
/// the next keyframe and asks for one; video also starts at its first keyframe.
public final class FrameAssembler {
    public let isVideo: Bool
    public private(set) var counters = AssemblerCounters()
    public private(set) var waitingForKeyframe: Bool

    private let depacketizer: any Depacketizer
    private let reorderWindow: Int
    private let maximumReorderDelayNanoseconds: Int64
    private var unwrapper = SequenceUnwrapper(bits: 16)
    private var buffered: [Int64: (packet: RTPPacket, arrival: MonotonicTime)] = [:]
    private var nextExpected: Int64?
    private var lossBeforeNext = false

    // The frame being collected.
    private var frameTimestamp: UInt32?
    private var framePayloads: [ArraySlice<UInt8>] = []
    private var frameCorrupt = false
    private static let maximumPacketsPerFrame = 4_096

    public init(depacketizer: any Depacketizer, isVideo: Bool, reorderWindow: Int = 512, maximumReorderDelayMilliseconds: Int64 = 150) {
        self.depacketizer = depacketizer
        self.isVideo = isVideo
        self.reorderWindow = reorderWindow
        self.maximumReorderDelayNanoseconds = maximumReorderDelayMilliseconds * 1_000_000
        waitingForKeyframe = isVideo
    }

    public func push(_ packet: RTPPacket, arrival: MonotonicTime) -> AssemblerOutput {
        var output = AssemblerOutput()
        counters.packets += 1
        let sequence = unwrapper.unwrap(UInt32(packet.sequenceNumber))
        if nextExpected == nil { nextExpected = sequence }
        guard let expected = nextExpected, sequence >= expected, buffered[sequence] == nil else {
            counters.duplicates += 1  // or too late: its slot was given up as lost
            return output
        }
        buffered[sequence] = (packet, arrival)
        drain(now: arrival, &output)
        return output
    }

    /// Gives up on packets that did not arrive in time; call on a timer.
    public func flush(now: MonotonicTime) -> AssemblerOutput {
        var output = AssemblerOutput()
        drain(now: now, &output)
        return output
    }

    /// When `flush` could next release something.
    public var nextDeadline: MonotonicTime? {
        guard let oldest = buffered.values.map(\.arrival).min() else { return nil }
        return oldest.adding(nanoseconds: maximumReorderDelayNanoseconds)
    }

    private func drain(now: MonotonicTime, _ output: inout AssemblerOutput) {
        while var expected = nextExpected, !buffered.isEmpty {
            if let entry = buffered.removeValue(forKey: expected) {
                process(entry.packet, afterLoss: lossBeforeNext, &output)
                lossBeforeNext = false
                nextExpected = expected + 1
                continue
            }
            // The expected packet is missing: wait, unless it is overdue or the window is full.
            let oldest = buffered.values.map(\.arrival).min() ?? now
            guard buffered.count >= reorderWindow || now.nanoseconds - oldest.nanoseconds >= maximumReorderDelayNanoseconds else { return }
            let next = buffered.keys.min() ?? expected
            counters.lost += Int(next - expected)
            expected = next
            nextExpected = next
            lossBeforeNext = true
        }
    }

    private func process(_ packet: RTPPacket, afterLoss: Bool, _ output: inout AssemblerOutput) {
        let payload = packet.payload
        guard isVideo else {
            // Audio: each packet is a frame; a loss only means that frame is missing.
            emit([payload], timestamp: packet.timestamp, &output)
            return
        }
        if afterLoss { frameCorrupt = true }
        if packet.timestamp != frameTimestamp {
            if frameTimestamp != nil { dropFrame(&output) }  // the previous frame never saw its marker
            frameTimestamp = packet.timestamp
            framePayloads = []
            frameCorrupt = afterLoss || !depacketizer.isFrameStart(payload)
        }
        framePayloads.append(payload)
        if framePayloads.count > FrameAssembler.maximumPacketsPerFrame { frameCorrupt = true }
        guard packet.marker else { return }
        if frameCorrupt {
            dropFrame(&output)
        } else {
            emit(framePayloads, timestamp: packet.timestamp, &output)
        }
        frameTimestamp = nil
        framePayloads = []
        frameCorrupt = false
    }

    private func emit(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32, _ output: inout AssemblerOutput) {
        let frame: EncodedFrame
        do {
            frame = try depacketizer.assemble(payloads, timestamp: timestamp)
        } catch {
            counters.malformedFrames += 1
            if isVideo { loseSync(&output) }
            return
        }
        if isVideo && waitingForKeyframe {
            guard frame.isKeyframe else {
                counters.framesDropped += 1
                return
            }
            waitingForKeyframe = false
        }
        counters.framesEmitted += 1
        output.frames.append(frame)
    }

    private func dropFrame(_ output: inout AssemblerOutput) {
        counters.framesDropped += 1
        frameTimestamp = nil
        framePayloads = []
        frameCorrupt = false
        loseSync(&output)
    }

    /// Later frames may reference the lost one: skip to the next keyframe and ask for it.
    private func loseSync(_ output: inout AssemblerOutput) {
        if !waitingForKeyframe { waitingForKeyframe = true }
        output.requestKeyframe = true
        counters.keyframeRequests += 1
    }
}
