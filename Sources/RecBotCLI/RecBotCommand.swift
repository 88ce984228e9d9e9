import ArgumentParser

/// The `recbot` command line.
@available(macOS 10.15, macCatalyst 13, iOS 13, tvOS 13, watchOS 6, *)
public struct RecBotCommand: AsyncParsableCommand {
    public static let version = "0.1.0"

    public static let configuration = CommandConfiguration(
        commandName: "recbot",
        abstract: "Records Sora channels into WebM files and catalogs sessions, recordings and events.",
        discussion: """
            Data directory: --data-dir, else RECBOT_DATA_DIR, else /var/lib/recbot (root) or
            ~/.local/share/recbot. It holds catalog.sqlite and recordings/<session-id>/.
            """,
        version: version,
        subcommands: [JoinCommand.self, SessionsCommand.self, RecordingsCommand.self, EventsCommand.self, SearchCommand.self, ComposeCommand.self, ExportCommand.self, WebhooksCommand.self, VerifyCommand.self, RepairCommand.self, PruneCommand.self,
                      UploadCommand.self, ServeCommand.self, JobsCommand.self]
    )

    public init() {}
}
