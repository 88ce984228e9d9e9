import Testing
import WireCoding
@testable import RecBot

/// `--stop-when-idle` and `--wait-for-senders` (issue 43): which verdict, and when.
@Suite struct SenderPresenceTests {
    static func at(_ seconds: Double) -> MonotonicTime { MonotonicTime(nanoseconds: Int64(seconds * 1e9)) }
    let joined = at(100)

    @Test func neitherSettingNeverEnds() {
        var presence = SenderPresence(idleMilliseconds: nil, waitForSendersMilliseconds: nil, joinedAt: joined)
        #expect(!presence.isActive)
        presence.sendersChanged(to: 0, now: Self.at(101))
        #expect(presence.deadline == nil)
        #expect(presence.verdict(now: Self.at(1_000_000)) == nil)
    }

    @Test func anEmptyRoomEndsIdleAfterTheWaitFromTheJoin() {
        var presence = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: nil, joinedAt: joined)
        presence.sendersChanged(to: 0, now: Self.at(100.2))  // the offer names nobody
        #expect(presence.deadline == Self.at(105))
        #expect(presence.verdict(now: Self.at(104.999)) == nil)
        #expect(presence.verdict(now: Self.at(105)) == .idle)
    }

    @Test func theIdleWaitStartsWhenTheLastSenderLeavesAndASenderComingBackStopsIt() {
        var presence = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: nil, joinedAt: joined)
        presence.sendersChanged(to: 2, now: Self.at(100.2))
        #expect(presence.deadline == nil)
        #expect(presence.verdict(now: Self.at(200)) == nil, "someone is sending: no end, however long")
        presence.sendersChanged(to: 1, now: Self.at(110))
        #expect(presence.deadline == nil)
        presence.sendersChanged(to: 0, now: Self.at(120))
        #expect(presence.deadline == Self.at(125))
        presence.sendersChanged(to: 1, now: Self.at(124))
        #expect(presence.verdict(now: Self.at(126)) == nil)
        presence.sendersChanged(to: 0, now: Self.at(130))
        #expect(presence.verdict(now: Self.at(135)) == .idle)
    }

    @Test func aRepeatedEmptyOfferDoesNotRestartTheWait() {
        var presence = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: nil, joinedAt: joined)
        presence.sendersChanged(to: 1, now: Self.at(101))
        presence.sendersChanged(to: 0, now: Self.at(110))
        presence.sendersChanged(to: 0, now: Self.at(113))  // a rejoin's offer: still nobody
        #expect(presence.deadline == Self.at(115))
    }

    @Test func nobodyByTheSenderWaitIsNobodyCame() {
        var presence = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: 60_000, joinedAt: joined)
        presence.sendersChanged(to: 0, now: Self.at(100.2))
        #expect(presence.deadline == Self.at(160), "before the first sender the sender wait governs, not the idle one")
        #expect(presence.verdict(now: Self.at(159)) == nil)
        #expect(presence.verdict(now: Self.at(160)) == .nobodyCame)
        #expect(SenderPresence.Verdict.nobodyCame.reason == "no-senders")
    }

    @Test func afterTheFirstSenderOnlyTheIdleWaitEnds() {
        var waitOnly = SenderPresence(idleMilliseconds: nil, waitForSendersMilliseconds: 60_000, joinedAt: joined)
        waitOnly.sendersChanged(to: 1, now: Self.at(150))
        waitOnly.sendersChanged(to: 0, now: Self.at(170))
        #expect(waitOnly.deadline == nil, "the sender wait only guards the start")
        #expect(waitOnly.verdict(now: Self.at(10_000)) == nil)

        var both = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: 60_000, joinedAt: joined)
        both.sendersChanged(to: 1, now: Self.at(150))
        both.sendersChanged(to: 0, now: Self.at(170))
        #expect(both.verdict(now: Self.at(175)) == .idle)
    }

    @Test func beforeTheFirstOfferThereIsNoVerdictAndALateEmptyOfferEndsAtOnce() {
        var presence = SenderPresence(idleMilliseconds: 5_000, waitForSendersMilliseconds: 10_000, joinedAt: joined)
        #expect(presence.deadline == nil)
        #expect(presence.verdict(now: Self.at(200)) == nil, "no offer yet: the room is unknown (the connect timeout decides)")
        presence.sendersChanged(to: 0, now: Self.at(200))
        #expect(presence.verdict(now: Self.at(200)) == .nobodyCame, "the waits count from the join")
    }

    @Test func hugeWaitsSaturateInsteadOfTrapping() {
        var presence = SenderPresence(idleMilliseconds: .max, waitForSendersMilliseconds: nil, joinedAt: joined)
        presence.sendersChanged(to: 0, now: Self.at(101))
        #expect(presence.deadline == MonotonicTime(nanoseconds: .max))
        #expect(presence.verdict(now: Self.at(1e9)) == nil)
    }
}
