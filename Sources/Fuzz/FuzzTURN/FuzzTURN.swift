// libFuzzer target for the TURN client and its stream framer (dev/fuzz.sh).
// The input is what a hostile TURN server sends: it is framed as a TCP stream (in chunks the
// first byte picks), and every frame goes to a client that an honest server first brought to a
// real allocation with a permission and a bound channel, so the data path and the response
// handling are reached, not only the first parse. The whole input also goes in as one datagram.
import FuzzSupport
import STUN
import TURN
import TURNServerModel
import WireCoding

let server = TransportAddress(ip: .v4(127, 0, 0, 1), port: 3478)
let peer = TransportAddress(ip: .v4(10, 0, 0, 1), port: 5000)

func allocatedClient(_ transport: TURNTransport) -> (TURNClient, MonotonicTime) {
    var generator = SplitMix64(seed: 7)
    let client = TURNClient(configuration: TURNClientConfiguration(server: server, transport: transport,
                                                                   credentials: TURNCredentials(username: "u", password: "p")),
                            random: { generator.next() })
    let honest = MiniTURNServer(users: ["u": "p"], relayed: TransportAddress(ip: .v4(127, 0, 0, 1), port: 50_000),
                                mapped: TransportAddress(ip: .v4(127, 0, 0, 1), port: 40_000), padsChannelData: transport.isStream)
    let now = MonotonicTime(nanoseconds: 0)
    var pending = client.start(now: now).toServer
    pending += client.send([1], to: peer, now: now).toServer
    pending += client.bindChannel(to: peer, now: now).toServer
    while !pending.isEmpty {
        let message = pending.removeFirst()
        for answer in honest.handle(message) { pending += client.handle(answer, now: now).toServer }
    }
    return (client, now)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTURN(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    _ = try? ChannelData.parse(bytes)

    let (datagramClient, start) = allocatedClient(.udp)
    _ = datagramClient.handle(bytes, now: start)

    let (streamClient, _) = allocatedClient(.tcp)
    var framer = TURNStreamFramer()
    let chunk = max(1, Int(bytes.first ?? 1))
    var now = start
    for offset in stride(from: 0, to: bytes.count, by: chunk) {
        guard let frames = try? framer.append(bytes[offset..<min(offset + chunk, bytes.count)]) else { break }
        for frame in frames {
            _ = streamClient.handle(frame, now: now)
            _ = streamClient.send([2, 3], to: peer, now: now)
        }
        // Time moves on too: retransmissions, refreshes and expiries run against what arrived.
        now = now.adding(milliseconds: 30_000)
        _ = streamClient.handleTimeout(now: now)
    }
    _ = streamClient.close(now: now)
    return 0
}

@main
struct Main {
    static func main() { runFuzzTarget(fuzzTURN) }
}
