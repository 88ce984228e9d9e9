import Foundation

/// Whether a process recorded in the catalog (a session's recorder, a webhook lease's owner)
/// still runs on this host.
public enum LocalProcess {
    /// kill(pid, 0): the process exists (EPERM: it exists but is someone else's). A zombie (a
    /// killed recbot nobody reaped yet, state Z in /proc) is dead for this purpose.
    public static func isAlive(pid: Int) -> Bool {
        guard pid > 0, pid <= Int(Int32.max) else { return false }
        guard kill(pid_t(pid), 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ", options: .backwards) else { return true }
        return stat[afterName.upperBound...].first != "Z"
    }
}
