import SoraSignalingCore
import Testing
@testable import RecBot

/// Control never waits behind messages, and messages are bounded by count and by bytes.
@Suite struct SessionInboxTests {
    @Test func aStopJumpsAFullQueueAndClosesKeepTheirPlace() async {
        let inbox = SessionInbox(limits: .init(messages: 3, bytes: 1 << 20))
        for index in 0..<5 { inbox.post(message: .webSocketMessage("m\(index)")) }
        inbox.post(message: .webSocketClosed(code: 1000), essential: true)  // never dropped, after its messages
        inbox.post(control: .stop(reason: "signal: SIGINT"))
        #expect(inbox.dropped == .init(messages: 2, bytes: 4))
        var seen: [String] = []
        for _ in 0..<5 {
            switch await inbox.next() {
            case .stop(let reason)?: seen.append("stop:\(reason)")
            case .webSocketMessage(let text)?: seen.append(text)
            case .webSocketClosed(let code)?: seen.append("closed:\(code ?? 0)")
            default: seen.append("?")
            }
        }
        #expect(seen == ["stop:signal: SIGINT", "m0", "m1", "m2", "closed:1000"])
    }

    @Test func bytesBoundTheQueueAsWellAsCount() {
        let inbox = SessionInbox(limits: .init(messages: 1_000, bytes: 100))
        #expect(inbox.post(message: .dataChannelMessage(label: "#chat", isBinary: true, data: [UInt8](repeating: 0, count: 60))))
        #expect(!inbox.post(message: .dataChannelMessage(label: "#chat", isBinary: true, data: [UInt8](repeating: 0, count: 60))))
        #expect(inbox.post(message: .dataChannelMessage(label: "#chat", isBinary: true, data: [UInt8](repeating: 0, count: 40))))
        #expect(inbox.dropped == .init(messages: 1, bytes: 60))
        #expect(inbox.drainMessages().count == 2)
    }

    @Test func aWaitingReaderIsWokenAndCloseEndsTheWait() async {
        let inbox = SessionInbox()
        async let first = inbox.next()
        try? await Task.sleep(nanoseconds: 20_000_000)
        inbox.post(control: .transportFailed("ICE failed"))
        guard case .transportFailed("ICE failed")? = await first else { Issue.record("not woken"); return }
        async let second = inbox.next()
        try? await Task.sleep(nanoseconds: 20_000_000)
        inbox.close()
        if case .some = await second { Issue.record("close did not end the wait") }
        #expect(!inbox.post(message: .webSocketMessage("late")))  // nothing is queued after the close
    }

    @Test func aFloodIsDroppedWithoutGrowingAndCountedOnce() {
        final class Count: @unchecked Sendable { var value = 0 }
        let firstDrops = Count()
        let inbox = SessionInbox(limits: .init(messages: 8, bytes: 1 << 20)) { firstDrops.value += 1 }
        for index in 0..<10_000 { inbox.post(message: .dataChannelMessage(label: "#chat", isBinary: false, data: Array("\(index)".utf8))) }
        #expect(inbox.dropped.messages == 9_992 && firstDrops.value == 1)
        #expect(inbox.drainMessages().count == 8)
    }
}
