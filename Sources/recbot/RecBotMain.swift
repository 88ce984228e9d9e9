import ArgumentParser
import RecBotCLI

/// Parses the command line and runs the command, async where it is (`join`).
@main
enum RecBotMain {
    static func main() async {
        RecBotLogging.bootstrap()
        do {
            var command = try RecBot.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            RecBot.exit(withError: error)
        }
    }
}
