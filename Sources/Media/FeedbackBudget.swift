import WireCoding

/// Session-wide limits on what the receiver asks its senders to resend.
///
/// Every stream already bounds its own requests (NACKs per packet, missing packets tracked,
/// one keyframe request per 200 ms). These bound their sum. When the whole session loses
/// packets at once — the host overloaded and its socket buffer overflowing — every stream
/// NACKs and asks for keyframes together, and the retransmissions and keyframes that answer
/// them are more load on the host that could not keep up: overload feeds itself. With the
/// budget, requests scale with what actually arrives, and overload degrades the recording
/// instead of collapsing it.
public struct FeedbackBudgetPolicy: Sendable, Equatable {
    /// NACKed sequence numbers earned per original (not retransmitted) media packet received.
    /// 0.5 lets one stream repair 20 % loss with lost retransmissions (about 0.3 NACKs per
    /// received packet), while the retransmissions can never exceed half the incoming load.
    public var nacksPerReceivedPacket: Double
    /// NACKs earned per second regardless of traffic, so a quiet session can still repair a burst.
    public var nacksPerSecond: Double
    /// The most NACKs saved up (and what a session starts with).
    public var nackBurst: Double
    /// Retries of a NACK wait while the budget is below this: first requests for new gaps go first.
    public var nackRetryReserve: Double
    /// Keyframe requests (PLI/FIR) earned per original video or audio packet received.
    public var keyframeRequestsPerReceivedPacket: Double
    public var keyframeRequestsPerSecond: Double
    public var keyframeRequestBurst: Double

    public init(nacksPerReceivedPacket: Double = 0.5, nacksPerSecond: Double = 100, nackBurst: Double = 1_000, nackRetryReserve: Double = 250,
                keyframeRequestsPerReceivedPacket: Double = 0.002, keyframeRequestsPerSecond: Double = 4, keyframeRequestBurst: Double = 64) {
        self.nacksPerReceivedPacket = nacksPerReceivedPacket
        self.nacksPerSecond = nacksPerSecond
        self.nackBurst = nackBurst
        self.nackRetryReserve = nackRetryReserve
        self.keyframeRequestsPerReceivedPacket = keyframeRequestsPerReceivedPacket
        self.keyframeRequestsPerSecond = keyframeRequestsPerSecond
        self.keyframeRequestBurst = keyframeRequestBurst
    }

    /// No session-wide limit (each stream's own limits still apply).
    public static let unlimited = FeedbackBudgetPolicy(nacksPerSecond: .infinity, nackBurst: .infinity, nackRetryReserve: 0,
                                                       keyframeRequestsPerSecond: .infinity, keyframeRequestBurst: .infinity)
}

/// Tokens earned by received packets and by time, up to a burst; spent one per request.
struct TokenBucket {
    let perEvent: Double
    let perSecond: Double
    let capacity: Double
    private(set) var tokens: Double
    private var refilledAt: MonotonicTime?

    init(perEvent: Double, perSecond: Double, capacity: Double) {
        (self.perEvent, self.perSecond, self.capacity) = (perEvent, perSecond, capacity)
        tokens = capacity
    }

    mutating func earn() {
        if tokens < capacity { tokens = min(capacity, tokens + perEvent) }
    }

    mutating func refill(now: MonotonicTime) {
        defer { refilledAt = now }
        guard let last = refilledAt, now > last, tokens < capacity else { return }
        tokens = min(capacity, tokens + perSecond * Double(now.nanoseconds - last.nanoseconds) / 1e9)
    }

    /// Spends one token if at least `reserve` tokens are left after it.
    mutating func take(keeping reserve: Double = 0) -> Bool {
        guard tokens >= 1 + reserve else { return false }
        tokens -= 1
        return true
    }
}

/// What the budget held back, for the session's log and metrics.
public struct FeedbackBudgetCounters: Sendable, Equatable {
    /// Times a due NACK had to wait for the budget (one number waiting through several
    /// rechecks counts at each).
    public var nacksDeferred = 0
    /// Times a stream's keyframe request had to wait for the budget.
    public var keyframeRequestsDeferred = 0

    public init() {}

    /// Counters of two connections (or periods), summed.
    public static func + (lhs: FeedbackBudgetCounters, rhs: FeedbackBudgetCounters) -> FeedbackBudgetCounters {
        var sum = lhs
        sum.nacksDeferred += rhs.nacksDeferred
        sum.keyframeRequestsDeferred += rhs.keyframeRequestsDeferred
        return sum
    }
}

/// The receiver's shared budget: streams ask it before each NACKed number and keyframe request.
struct FeedbackBudget {
    /// How long deferred requests wait before the timer looks again (not every packet).
    static let recheckNanoseconds: Int64 = 20_000_000

    private var nacks: TokenBucket
    private var keyframes: TokenBucket
    private let retryReserve: Double
    private(set) var counters = FeedbackBudgetCounters()
    /// Set when something was deferred: timers before this would find the budget still empty.
    private(set) var recheckAt: MonotonicTime?

    init(policy: FeedbackBudgetPolicy) {
        nacks = TokenBucket(perEvent: policy.nacksPerReceivedPacket, perSecond: policy.nacksPerSecond, capacity: policy.nackBurst)
        keyframes = TokenBucket(perEvent: policy.keyframeRequestsPerReceivedPacket, perSecond: policy.keyframeRequestsPerSecond,
                                capacity: policy.keyframeRequestBurst)
        retryReserve = policy.nackRetryReserve
    }

    /// An original media packet arrived (retransmissions earn nothing, or they would pay for more).
    mutating func received() {
        nacks.earn()
        keyframes.earn()
    }

    /// May this sequence number be NACKed now? A retry may not dig into the reserve.
    mutating func allowNack(isRetry: Bool, now: MonotonicTime) -> Bool {
        nacks.refill(now: now)
        if let recheck = recheckAt, now >= recheck { recheckAt = nil }
        if nacks.take(keeping: isRetry ? retryReserve : 0) { return true }
        counters.nacksDeferred += 1
        recheckAt = now.adding(nanoseconds: Self.recheckNanoseconds)
        return false
    }

    /// May a keyframe be requested now? (A refused stream asks again with its next frame.)
    mutating func allowKeyframeRequest(now: MonotonicTime) -> Bool {
        keyframes.refill(now: now)
        if keyframes.take() { return true }
        counters.keyframeRequestsDeferred += 1
        return false
    }

    /// A deadline no earlier than the recheck time while requests wait for the budget.
    func clamp(_ deadline: MonotonicTime) -> MonotonicTime {
        guard let recheck = recheckAt, deadline < recheck else { return deadline }
        return recheck
    }
}
