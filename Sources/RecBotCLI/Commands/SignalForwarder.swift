import Dispatch
import Foundation
import Glibc
import Outcomes

/// Turns SIGINT and SIGTERM into a clean stop (files finalized, catalog updated). A second
/// one means "now": recbot exits at once with 128 + the signal number. Every cluster written
/// so far is on disk and the files have catalog rows, so `recbot repair` finishes them.
final class SignalForwarder: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let lock = NSLock()
    private var received = 0

    init(_ handler: @escaping @Sendable (String) -> Void) {
        for (number, name, cause) in [(SIGINT, "SIGINT", EndCause.StopSignal.interrupt), (SIGTERM, "SIGTERM", .terminate)] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self, source] in
                // Signals that arrive before the handler runs are coalesced into one call:
                // `data` says how many there were, so two quick ^C still exit at once.
                let arrived = max(1, Int(source.data))
                let count = lock.withLock { received += arrived; return received }
                guard count == 1 else {
                    StandardStreams.err("recbot: second \(name): exiting now; `recbot repair` finishes the files\n")
                    exit(ExitStatus(.stoppedAtOnce(signal: cause)).rawValue)
                }
                handler(name)
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources {
            source.cancel()
            source.setEventHandler(handler: nil)  // the handler holds its source: let both go
        }
    }
}
