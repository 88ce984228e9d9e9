// SCTP receive-path benchmark. Run it optimized: `swift run -c release BenchSCTP`.
// Every figure is a ratio against a baseline measured in the same run (parsing the same
// packets), so runs on different machines compare; absolute times are printed for context.
import Foundation
import SCTP
import WireCoding

let port: UInt16 = 5000

/// An association established by a peer whose INIT we answer; returns it and the tag to use.
func established() -> (SCTPAssociation, UInt32) {
    var generator = SplitMix64(seed: 7)
    let association = SCTPAssociation(random: { generator.next() })
    let initPacket = SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: 0, chunks: [.initiation(SCTPInit(
        initiateTag: 0xABCD, advertisedReceiverWindow: 1 << 20, outboundStreams: 16, inboundStreams: 16, initialTSN: 1))]).serialized
    guard let reply = association.handle(packet: initPacket, now: .milliseconds(0)).packets.first,
          let ack = try? SCTPPacket(parsing: reply), case .initiationAck(let initAck) = ack.chunks.first, let cookie = initAck.stateCookie
    else {
        FileHandle.standardError.write(Data("BenchSCTP: the association could not be set up\n".utf8))
        exit(1)
    }
    _ = association.handle(packet: SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: initAck.initiateTag,
                                              chunks: [.cookieEcho(cookie: cookie)]).serialized, now: .milliseconds(1))
    return (association, initAck.initiateTag)
}

/// Messages of `fragmentsPerMessage` fragments of `fragmentSize` bytes, one DATA chunk per packet.
func packets(tag: UInt32, messages: Int, fragmentsPerMessage: Int, fragmentSize: Int, ending: Bool = true) -> [[UInt8]] {
    var result: [[UInt8]] = []
    var tsn: UInt32 = 1
    for message in 0..<messages {
        for fragment in 0..<fragmentsPerMessage {
            let chunk = SCTPData(tsn: tsn, streamID: 1, streamSequence: UInt16(truncatingIfNeeded: message), payloadProtocol: 53,
                                 beginning: fragment == 0, ending: ending && fragment == fragmentsPerMessage - 1,
                                 userData: [UInt8](repeating: UInt8(truncatingIfNeeded: message), count: fragmentSize))
            result.append(SCTPPacket(sourcePort: port, destinationPort: port, verificationTag: tag, chunks: [.data(chunk)]).serialized)
            tsn &+= 1
        }
    }
    return result
}

/// Best of `rounds` wall-clock runs of `body`, in seconds.
func measure(rounds: Int = 5, _ body: () -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    }
    return best
}

func report(_ name: String, _ seconds: Double, baseline: Double, count: Int) {
    let label = name.padding(toLength: 52, withPad: " ", startingAt: 0)
    print(label + String(format: " %9.0f ns/packet  %6.2fx baseline", seconds / Double(count) * 1e9, seconds / baseline))
}

let (_, tag) = established()
// Honest traffic: 2 000 messages of four 1 100-byte fragments, in order.
let honest = packets(tag: tag, messages: 2_000, fragmentsPerMessage: 4, fragmentSize: 1_100)
let baseline = measure { for packet in honest { _ = try? SCTPPacket(parsing: packet) } }
print(String(format: "baseline: parsing %d packets: %.1f ms", honest.count, baseline * 1e3))

let inOrder = measure {
    let (association, _) = established()
    for packet in honest { _ = association.handle(packet: packet, now: .milliseconds(2)) }
}
report("receive, in order (parse + SACK + reassembly)", inOrder, baseline: baseline, count: honest.count)

var swapped = honest
for index in stride(from: 0, to: swapped.count - 1, by: 2) { swapped.swapAt(index, index + 1) }
let reordered = measure {
    let (association, _) = established()
    for packet in swapped { _ = association.handle(packet: packet, now: .milliseconds(2)) }
}
report("receive, every pair swapped", reordered, baseline: baseline, count: honest.count)

// Hostile: one message of one-byte fragments that never ends (below the 4096-chunk cap, so
// all of it is held). Linear cost means doubling the fragments doubles the time (the
// quadratic code before this benchmark: about 4x).
var hostileTimes: [Double] = []
for count in [2_000, 4_000] {
    let hostile = packets(tag: tag, messages: 1, fragmentsPerMessage: count, fragmentSize: 1, ending: false)
    let seconds = measure(rounds: 3) {
        let (association, _) = established()
        for packet in hostile { _ = association.handle(packet: packet, now: .milliseconds(2)) }
    }
    hostileTimes.append(seconds)
    report("hostile: \(count) one-byte fragments, no end", seconds, baseline: baseline * Double(count) / Double(honest.count), count: count)
}
print(String(format: "hostile scaling, 4 000 vs 2 000 fragments: %.2fx (2 = linear)", hostileTimes[1] / hostileTimes[0]))
