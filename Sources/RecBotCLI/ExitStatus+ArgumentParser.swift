import ArgumentParser
import Glibc
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

extension RecBotCommand {
    /// Ends the process for what a command threw. A `CommandEnd` carries its cause; help,
    /// version and command-line errors are ArgumentParser's to word, and their code comes from
    /// the same decision as every other end (`ExitStatus(_:)`).
    public static func end(with error: any Error) -> Never {
        if let end = error as? CommandEnd { Glibc.exit(ExitStatus(end.cause).rawValue) }
        let parserCode = exitCode(for: error)
        let cause: EndCause = parserCode == .success ? .completed : parserCode == .validationFailure ? .badCommandLine : .internalFailure
        let message = fullMessage(for: error)
        if !message.isEmpty { (parserCode == .success ? StandardStreams.out : StandardStreams.err)(message + "\n") }
        Glibc.exit(ExitStatus(cause).rawValue)
    }
}
