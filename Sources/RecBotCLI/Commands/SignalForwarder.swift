import Dispatch
import Foundation
import Glibc

/// Turns SIGINT and SIGTERM into a clean stop (files finalized, catalog updated). A second
/// one means "now": recbot exits at once with 128 + the signal number. Every cluster written
/// so far is on disk and the files have catalog rows, so `recbot repair` finishes them.
final class SignalForwarder: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    private let lock = NSLock()
    private var received = 0

    init(_ handler: @escaping @Sendable (String) -> Void) {
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let count = lock.withLock { received += 1; return received }
                guard count == 1 else {
                    StandardStreams.err("recbot: second \(name): exiting now; `recbot repair` finishes the files\n")
                    exit(128 + number)
                }
                handler(name)
            }
            source.resume()
            sources.append(source)
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
