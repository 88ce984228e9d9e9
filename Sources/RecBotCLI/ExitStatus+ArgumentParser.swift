import ArgumentParser
import Outcomes

extension ExitStatus {
    public var exitCode: ExitCode { ExitCode(rawValue) }
}

/// How a command ends other than by returning: thrown with what happened, and turned into the
/// process's exit code once, by `ExitStatus(_:)`, where the command line is run.
public struct CommandEnd: Error {
    public let cause: EndCause

    public init(cause: EndCause) {
        self.cause = cause
    }

    /// What ArgumentParser exits with.
    public var exitCode: ExitCode { ExitStatus(cause).exitCode }
}
