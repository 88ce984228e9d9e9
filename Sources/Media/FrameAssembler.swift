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

    /// Forgets the history: the next value is taken as it is.
    public mutating func reset() { highest = nil }
}

/// Why a frame did not reach the recorder.
public enum FrameDropReason: String, Sendable, CaseIterable {
    /// A packet of the frame was given up as lost.
    case incomplete
    /// Video only: a frame before the (next) keyframe, which it cannot be decoded without.
    case waitingForKeyframe
    /// The depacketizer rejected the payloads.
    case malformed
    /// Over the per-frame packet or byte bound.
    case oversized
}

public struct FrameDropCounters: Sendable, Equatable {
    public var incomplete = 0
    public var waitingForKeyframe = 0
    public var malformed = 0
    public var oversized = 0

    public init() {}

    public var total: Int { incomplete + waitingForKeyframe + malformed + oversized }

    mutating func count(_ reason: FrameDropReason) {
        switch reason {
        case .incomplete: incomplete += 1
        case .waitingForKeyframe: waitingForKeyframe += 1
        case .malformed: malformed += 1
        case .oversized: oversized += 1
        }
    }

    public static func + (lhs: FrameDropCounters, rhs: FrameDropCounters) -> FrameDropCounters {
        combined(lhs, rhs, +)
    }

    /// What was counted since `earlier` (a snapshot of the same counters; never below 0).
    public func since(_ earlier: FrameDropCounters) -> FrameDropCounters {
        Self.combined(self, earlier) { max(0, $0 - $1) }
    }

    private static func combined(_ lhs: FrameDropCounters, _ rhs: FrameDropCounters, _ op: (Int, Int) -> Int) -> FrameDropCounters {
        var result = FrameDropCounters()
        result.incomplete = op(lhs.incomplete, rhs.incomplete)
        result.waitingForKeyframe = op(lhs.waitingForKeyframe, rhs.waitingForKeyframe)
        result.malformed = op(lhs.malformed, rhs.malformed)
        result.oversized = op(lhs.oversized, rhs.oversized)
        return result
    }
}

public struct AssemblerOutput: Sendable {
    public var frames: [EncodedFrame] = []
    /// A video frame was lost for good: the decoder needs a keyframe (PLI/FIR).
    public var keyframeNeeded = false
}

/// Turns one stream's packets, given in sequence order with a mark where packets were lost,
/// into whole frames. A frame that misses a packet is never emitted; video then waits for the
/// next keyframe (and says so), and starts at its first keyframe.
public struct FrameAssembler {
    public let isVideo: Bool
    public private(set) var dropped = FrameDropCounters()
    public private(set) var framesEmitted = 0
    public private(set) var waitingForKeyframe: Bool

    private(set) var depacketizer: any Depacketizer
    // The frame being collected.
    private var frameTimestamp: UInt32?
    private var framePayloads: [ArraySlice<UInt8>] = []
    private var frameBytes = 0
    private var frameCorrupt = false
    private var frameOversized = false
    private var lastKeyframeTimestamp: UInt32?
    static let maximumPacketsPerFrame = 4_096
    static let maximumBytesPerFrame = 8 << 20

    public init(depacketizer: any Depacketizer, isVideo: Bool) {
        self.depacketizer = depacketizer
        self.isVideo = isVideo
        waitingForKeyframe = isVideo
    }

    /// Another codec on the same stream (a payload-type change): what was collected is dropped.
    public mutating func switchCodec(to depacketizer: any Depacketizer, _ output: inout AssemblerOutput) {
        if frameTimestamp != nil { drop(.incomplete, &output) }
        self.depacketizer = depacketizer
        if isVideo { waitingForKeyframe = true }
    }

    /// The next packet in sequence order; `afterLoss` when packets before it were given up.
    public mutating func push(_ packet: RTPPacket, afterLoss: Bool, _ output: inout AssemblerOutput) {
        let payload = packet.payload
        guard isVideo else {
            // Audio: each packet is a frame; a loss only means those frames are missing.
            emit(payload, timestamp: packet.timestamp, &output)
            return
        }
        if packet.timestamp != frameTimestamp {
            // A new frame. The one being collected never saw its marker: its end was lost.
            if frameTimestamp != nil { drop(.incomplete, &output) }
            beginFrame(packet.timestamp)
            // Whatever was lost belonged to earlier frames if this packet starts its own frame
            // intact; then a keyframe right after a loss is kept. Whole frames may have been
            // lost in the gap, so delta frames still wait for a keyframe.
            if afterLoss && !waitingForKeyframe { loseSync(&output) }
            frameCorrupt = !depacketizer.isFrameStart(payload)
        } else if afterLoss {
            frameCorrupt = true  // a piece from the middle of this frame is missing
        }
        append(payload)
        guard packet.marker else { return }
        if frameOversized {
            drop(.oversized, &output)
        } else if frameCorrupt {
            drop(.incomplete, &output)
        } else {
            // Emitted before the frame's state is cleared: the payload list is then held only
            // here, so clearing keeps its storage instead of allocating another.
            emit(framePayloads, timestamp: packet.timestamp, &output)
            endFrame()
        }
    }

    /// The stream stopped (SSRC gone, codec change): a half-collected frame is dropped.
    public mutating func abandon(_ output: inout AssemblerOutput) {
        if frameTimestamp != nil { drop(.incomplete, &output) }
    }

    /// A frame was dropped downstream (recorder order or backpressure): later frames may
    /// reference it, so video goes back to waiting for a keyframe, unless a keyframe newer than
    /// the dropped frame was already emitted (the drop is reported after the fact).
    public mutating func frameLostDownstream(rtpTimestamp: UInt32, _ output: inout AssemblerOutput) {
        guard isVideo else { return }
        if let keyframe = lastKeyframeTimestamp, Int32(bitPattern: keyframe &- rtpTimestamp) > 0 { return }
        loseSync(&output)
    }

    /// Bytes of the frame being collected.
    public var collectedBytes: Int { frameBytes }

    private mutating func beginFrame(_ timestamp: UInt32) {
        frameTimestamp = timestamp
        framePayloads.removeAll(keepingCapacity: true)
        frameBytes = 0
        frameCorrupt = false
        frameOversized = false
    }

    private mutating func endFrame() {
        frameTimestamp = nil
        framePayloads.removeAll(keepingCapacity: true)
        frameBytes = 0
        frameCorrupt = false
        frameOversized = false
    }

    private mutating func append(_ payload: ArraySlice<UInt8>) {
        guard !frameOversized else { return }  // the rest of this timestamp is ignored, not held
        if framePayloads.count >= FrameAssembler.maximumPacketsPerFrame || frameBytes + payload.count > FrameAssembler.maximumBytesPerFrame {
            frameOversized = true
            framePayloads.removeAll(keepingCapacity: false)
            return
        }
        framePayloads.append(payload)
        frameBytes += payload.count
    }

    private mutating func emit(_ payloads: [ArraySlice<UInt8>], timestamp: UInt32, _ output: inout AssemblerOutput) {
        emit(timestamp: timestamp, &output) { depacketizer throws(DepacketizeError) in try depacketizer.assemble(payloads, timestamp: timestamp) }
    }

    /// One packet's frame (audio), without building a one-element payload list for it.
    private mutating func emit(_ payload: ArraySlice<UInt8>, timestamp: UInt32, _ output: inout AssemblerOutput) {
        emit(timestamp: timestamp, &output) { depacketizer throws(DepacketizeError) in try depacketizer.assemble(single: payload, timestamp: timestamp) }
    }

    private mutating func emit(timestamp: UInt32, _ output: inout AssemblerOutput,
                               _ assemble: (any Depacketizer) throws(DepacketizeError) -> EncodedFrame) {
        let frame: EncodedFrame
        do {
            frame = try assemble(depacketizer)
        } catch {
            dropped.count(.malformed)
            if isVideo { loseSync(&output) }
            return
        }
        if isVideo && waitingForKeyframe {
            guard frame.isKeyframe else {
                dropped.count(.waitingForKeyframe)
                output.keyframeNeeded = true
                return
            }
            waitingForKeyframe = false
        }
        framesEmitted += 1
        if frame.isKeyframe { lastKeyframeTimestamp = timestamp }
        output.frames.append(frame)
    }

    private mutating func drop(_ reason: FrameDropReason, _ output: inout AssemblerOutput) {
        dropped.count(reason)
        endFrame()
        if isVideo { loseSync(&output) }
    }

    /// Later frames may reference the lost one: skip to the next keyframe and ask for it.
    private mutating func loseSync(_ output: inout AssemblerOutput) {
        waitingForKeyframe = true
        output.keyframeNeeded = true
    }
}
