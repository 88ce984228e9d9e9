import Glibc
import Outcomes

/// Writes to standard output and error with write(2). Foundation's `FileHandle.write` traps
/// when a write fails, and SIGPIPE is ignored (a peer closing a socket must not kill a
/// recording), so `recbot … | head` would crash on the first write after head exits.
enum StandardStreams {
    /// Standard output: once the reader has gone away, the command ends quietly with the
    /// status a shell shows for SIGPIPE.
    static func out(_ text: String) {
        guard write(STDOUT_FILENO, text) else { exit(ExitStatus(.outputClosed).rawValue) }
    }

    /// Standard error: a failure is ignored (there is nowhere left to report it).
    static func err(_ text: String) {
        _ = write(STDERR_FILENO, text)
    }

    private static func write(_ descriptor: Int32, _ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
