import ArgumentParser

/// The `recbot` command line.
public struct RecBot: ParsableCommand {
    public static let version = "0.1.0"

    public static let configuration = CommandConfiguration(
        commandName: "recbot",
        abstract: "Records Sora channels into WebM files and catalogs sessions, recordings and events.",
        discussion: """
            Data directory: --data-dir, else RECBOT_DATA_DIR, else /var/lib/recbot (root) or
            ~/.local/share/recbot. It holds catalog.sqlite and recordings/<session-id>/.
            """,
        version: version,
        subcommands: [SessionsCommand.self, RecordingsCommand.self, EventsCommand.self]
    )

    public init() {}
}
