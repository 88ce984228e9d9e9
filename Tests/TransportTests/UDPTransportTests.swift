import Foundation
import NIOPosix
import STUN
import Testing
import Transport

@Suite struct UDPTransportTests {
    @Test func socketsAskForALargeReceiveBuffer() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let transport = try await UDPTransport.bind(addresses: [IPAddress("127.0.0.1")!], on: group.next())
        let granted = try await transport.grantedReceiveBufferBytes()
        await transport.close()
        try await group.shutdownGracefully()
        // Linux grants min(asked, net.core.rmem_max) and reports it doubled.
        let ceiling = (try? String(contentsOfFile: "/proc/sys/net/core/rmem_max", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? Int(UDPTransport.receiveBufferBytes)
        let expected = 2 * min(Int(UDPTransport.receiveBufferBytes), ceiling)
        #expect(granted == [expected], "granted \(granted), rmem_max \(ceiling)")
    }
}
