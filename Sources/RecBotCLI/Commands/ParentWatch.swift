import Dispatch
import Glibc

/// `join --exit-with-parent`: a recording `recbot serve` started ends when that service is
/// gone (SIGKILL, a crash) rather than going on unsupervised: nobody renews its job's lease,
/// so another worker may take the job over. The parent's death shows as a new parent pid
/// (init or a subreaper); polled, because PR_SET_PDEATHSIG fires when the forking *thread*
/// ends, which for Foundation's Process is not the service's life.
final class ParentWatch: @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(interval: DispatchTimeInterval = .milliseconds(250), _ parentGone: @escaping @Sendable () -> Void) {
        let parent = getppid()
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [timer] in
            guard getppid() != parent else { return }
            timer.cancel()
            parentGone()
        }
        timer.resume()
    }

    func cancel() {
        timer.cancel()
    }
}
