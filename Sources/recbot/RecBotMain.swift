import ArgumentParser
import Foundation
import Glibc
import RecBotCLI

/// Parses the command line and runs the command, async where it is (`join`).
@main
enum RecBotMain {
    static func main() async {
        // A peer that closes a socket (or `recbot … | head`) must give an EPIPE error, not kill
        // the process mid-recording.
        signal(SIGPIPE, SIG_IGN)
        FilePermissions.apply(environment: ProcessInfo.processInfo.environment)
        RecBotLogging.bootstrap()
        do {
            var command = try RecBotCommand.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            RecBotCommand.end(with: error)
        }
    }
}
