import Glibc
import Synchronization

/// The sockets' thread runs ahead of the rest of recbot. Past capacity (a CPU quota, a busy
/// host) it shares the CPU with the media core, which always has work waiting; at an even
/// share it could not read every datagram, and the kernel dropped them unread, audio and
/// control included (150,020 datagrams and 8 % of the audio at 256 publishers under a quota of
/// 0.25 cores). Ahead of the core it reads them all into the receive backlog, where control goes
/// first and audio waits its turn (the same run: 0 dropped, 100 % of the audio). It blocks
/// whenever the sockets are empty, so it takes only what reading costs.
enum ReaderPriority {
    /// The nice value asked for (the rest of recbot stays at its own).
    static let niceness: Int32 = -10

    /// Whether a refusal was already reported: each rejoin binds a new sockets' thread, and the
    /// answer does not change within a process.
    private static let refusalReported = Atomic<Bool>(false)

    /// True the first time in this process (the caller logs it then, and never again).
    static func firstRefusal() -> Bool {
        !refusalReported.exchange(true, ordering: .relaxed)
    }

    /// Raises the calling thread's priority (Linux keeps one per thread). Nil when not allowed:
    /// it needs root, CAP_SYS_NICE or an RLIMIT_NICE that reaches it (systemd's `LimitNICE=`).
    static func raiseCurrentThread() -> Int32? {
        // Who 0 is the calling thread: Linux keeps the nice value per thread.
        guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) == 0 else { return nil }
        return niceness
    }
}
