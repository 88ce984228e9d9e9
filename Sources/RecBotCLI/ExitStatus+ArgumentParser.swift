import ArgumentParser
import RecBot

extension ExitStatus {
    public var exitCode: ExitCode { ExitCode(rawValue) }
}
