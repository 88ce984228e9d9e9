import WireCoding

/// Wakes at the `SenderPresence` deadline and hands its verdict to the session, which stops.
/// The deadline moves whenever an offer changes who is sending, and nothing tells this task
/// when, so it also looks again every quarter second: a room is stopped within that of its
/// deadline, well inside the second operators are promised.
enum PresenceWatch {
    static let pollNanoseconds: Int64 = 250_000_000

    /// Runs until a verdict (handed to `onVerdict`, once) or cancellation.
    static func run(presence: @escaping @Sendable () -> SenderPresence, clock: any TimeSource,
                    onVerdict: @escaping @Sendable (SenderPresence.Verdict) -> Void) async {
        while !Task.isCancelled {
            let now = clock.now()
            let current = presence()
            if let verdict = current.verdict(now: now) {
                onVerdict(verdict)
                return
            }
            let untilDeadline = current.deadline.map { $0.nanoseconds &- now.nanoseconds } ?? pollNanoseconds
            do {
                try await clock.sleep(nanoseconds: max(1_000_000, min(pollNanoseconds, untilDeadline)))
            } catch {
                return  // cancelled
            }
        }
    }
}
