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
