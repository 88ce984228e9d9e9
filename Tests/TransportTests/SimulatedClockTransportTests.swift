import NIOCore
import NIOPosix
import PeerConnection
import STUN
import Synchronization
import TestSupport
import Testing
import Transport
import WireCoding

/// The socket driver waits on the clock it is given: on a manual clock the core's deadlines
/// (ICE's checks, its 30 s connect timeout) come when the test moves the clock, not before,
/// however long the test waits.
@Suite struct SimulatedClockTransportTests {
    @Test func theCoresDeadlinesComeWhenTheClockIsMoved() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let clock = ManualTimeSource(monotonic: .milliseconds(0))
        let transport = try await UDPTransport.bind(addresses: [IPAddress("127.0.0.1")!], on: group.next(), clock: clock)
        // Its remote candidate never answers: ICE fails when its connect timeout has passed.
        let core = try makeCore()
        let failedAt = Mutex<MonotonicTime?>(nil)
        transport.run(core) { event in
            if case .failed = event { failedAt.withLock { $0 = $0 ?? clock.now() } }
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(failedAt.withLock { $0 } == nil, "nothing is due while the clock stands still")

        for _ in 0..<60 where failedAt.withLock({ $0 }) == nil {
            clock.advance(milliseconds: 1_000)
            // The loop's turn: the woken timer runs there and schedules the next deadline.
            for _ in 0..<100 where clock.sleeping == 0 && failedAt.withLock({ $0 }) == nil {
                try await Task.sleep(for: .milliseconds(5))
            }
        }
        await transport.close()
        try await group.shutdownGracefully()
        let failed = try #require(failedAt.withLock { $0 }, "ICE failed within a minute of simulated time")
        #expect(failed >= .milliseconds(30_000) && failed <= .milliseconds(31_000), "failed at \(failed)")
    }
}
