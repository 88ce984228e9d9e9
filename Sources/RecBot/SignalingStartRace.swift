import Logging
import NIOCore
import SoraSignaling
import SoraSignalingCore
import WireCoding

/// Signaling up to the offer, raced against a stop request: a signal while Sora has not
/// answered yet ends the wait at once (the connect attempt is cancelled and, if it still
/// completes, closed) instead of after the connect timeout.
enum SignalingStartRace {
    enum Outcome { case started(SignalingStart), failed(SignalingError), stopped(String) }

    static func run(options: JoinOptions, stopRequest: StopRequest, group: EventLoopGroup, clock: any TimeSource, logger: Logger) async -> Outcome {
        await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let first = FirstOutcome()
            let tasks = TaskSet()
            let work = Task {
                let outcome: Outcome
                do throws(SignalingError) {
                    outcome = .started(try await SignalingConnector.start(urls: options.urls, options: options.connect, insecure: options.insecure,
                                                                          group: group, timeoutSeconds: options.connectTimeoutSeconds, clock: clock, logger: logger))
                } catch {
                    outcome = .failed(error)
                }
                if first.claim() {
                    continuation.resume(returning: outcome)
                    tasks.cancelAll()  // the stop waiter: nothing of this race outlives it
                } else if case .started(let late) = outcome {
                    await late.connection.close()
                }
            }
            tasks.add(Task {
                guard let why = await stopRequest.wait(), first.claim() else { return }
                work.cancel()
                continuation.resume(returning: .stopped(why))
            })
        }
    }
}
