import ServiceCore
import Testing

@Suite struct JobRetryTests {
    @Test func unreachableServersAreTriedAgainWithABackoffAFewTimes() {
        #expect(JobRetry.delay(exitStatus: 69, claims: 1, stopRequested: false, expiresAt: nil, now: 0) == 1_000)
        #expect(JobRetry.delay(exitStatus: 82, claims: 2, stopRequested: false, expiresAt: nil, now: 0) == 2_000)
        #expect(JobRetry.delay(exitStatus: 80, claims: 4, stopRequested: false, expiresAt: nil, now: 0) == 8_000)
        #expect(JobRetry.delay(exitStatus: 69, claims: JobRetry.maximumClaims, stopRequested: false, expiresAt: nil, now: 0) == nil, "enough")
    }

    @Test func otherEndsAStopOrTheExpiryEndTheJob() {
        for status: Int32 in [0, 1, 74, 77, 78, 79, 143] {
            #expect(JobRetry.delay(exitStatus: status, claims: 1, stopRequested: false, expiresAt: nil, now: 0) == nil, "exit \(status)")
        }
        #expect(JobRetry.delay(exitStatus: 69, claims: 1, stopRequested: true, expiresAt: nil, now: 0) == nil, "session.destroyed came")
        #expect(JobRetry.delay(exitStatus: 69, claims: 1, stopRequested: false, expiresAt: 1_000, now: 0) == nil, "expires before the retry")
        #expect(JobRetry.delay(exitStatus: 69, claims: 1, stopRequested: false, expiresAt: 1_001, now: 0) == 1_000)
    }
}

@Suite struct WorkerCapacityTests {
    @Test func sessionsAloneOrAPublisherBudgetAsWell() {
        #expect(WorkerCapacity.claimLimit(running: 1, sessions: 4, publishers: nil, publisherBudget: nil) == 3)
        #expect(WorkerCapacity.claimLimit(running: 4, sessions: 4, publishers: 0, publisherBudget: 100) == 0)
        #expect(WorkerCapacity.claimLimit(running: 1, sessions: 4, publishers: 40, publisherBudget: 100) == 1, "one at a time: its size is unknown")
        #expect(WorkerCapacity.claimLimit(running: 2, sessions: 4, publishers: 100, publisherBudget: 100) == 0, "the budget is spent")
        #expect(WorkerCapacity.claimLimit(running: 0, sessions: 4, publishers: nil, publisherBudget: 100) == 0, "publishers unknown: none")
    }
}
