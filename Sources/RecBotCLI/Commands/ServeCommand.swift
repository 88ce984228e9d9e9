import Archive
import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOSSL
import Service
import ServiceCore
import ServiceLifecycle

/// `recbot serve`: records the channels Sora's webhooks and the API ask for, each as a child
/// `recbot join`, with jobs leased from the catalog so a fleet shares them (docs/service.md).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the recording service: Sora's webhooks and an API in, one `recbot join` per recording.",
        discussion: """
            Endpoints: POST /webhooks/sora (Sora's session and event webhooks), POST /recordings,
            GET /recordings[?state=…], GET and DELETE /recordings/{id}, GET /healthz (no credentials),
            and the web archive under /archive/ (docs/web.md; --capacity 0 serves it without recording).
            Every recording is a child `recbot join` that inherits this process's RECBOT_* settings
            (except RECBOT_SERVE_*), with the matching rule's options on top. Settings:
            \(SettingName.serve.map(\.helpEntry).joined(separator: ", ")).
            Secrets only in the environment or the config file: RECBOT_SERVE_WEBHOOK_SECRET (sent by Sora in
            the header RECBOT_SERVE_WEBHOOK_SECRET_HEADER, default x-recbot-webhook-secret),
            RECBOT_SERVE_WEBHOOK_BASIC_AUTH (user:password), RECBOT_SERVE_API_TOKEN (Authorization: Bearer).
            """)

    @OptionGroup var common: CommonOptions
    @Option(help: ArgumentHelp("Address to listen on (default 127.0.0.1:8480).", valueName: "host:port")) var listen: String?
    @Option(help: ArgumentHelp("The rules file (JSON): which channels Sora's webhooks start recordings for.", valueName: "file")) var rules: String?
    @Option(help: ArgumentHelp("Recordings this worker runs at once (default 4).", valueName: "n")) var capacity: Int?
    @Option(name: .customLong("capacity-publishers"), help: ArgumentHelp(
        "Also a budget of publishers: a job is claimed only while the recordings here record fewer, one at a time.", valueName: "n"))
    var capacityPublishers: Int?
    @Option(help: ArgumentHelp("How long a job's lease lasts without renewal (default 10s): failover takes about this long.",
                               valueName: "duration")) var lease: DurationArgument?
    @Option(name: .customLong("prune-every"), help: ArgumentHelp(
        "How often to remove the files of sessions whose retention (a rule's retention_days) ended (default 1h; 0: never).",
        valueName: "duration")) var pruneEvery: DurationArgument?
    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve HTTPS with this PEM certificate chain.", valueName: "file")) var tlsCertificate: String?
    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The certificate's PEM private key.", valueName: "file")) var tlsKey: String?
    @Option(name: .customLong("tls-client-ca"), help: ArgumentHelp(
        "Require client certificates signed by these PEM CAs (mTLS).", valueName: "file")) var tlsClientCA: String?

    func run() async throws {
        let settings = try common.settings()
        let logger = Logger(label: "recbot.serve")
        let configuration: ServeConfiguration
        do { configuration = try ServeConfiguration(command: self, settings: settings) } catch {
            throw Console.fail(error, cause: .invalidConfiguration)
        }
        let location = try common.catalogLocation(settings: settings)
        let store: any CatalogStore
        do { store = try location.open(logger: Logger(label: "recbot.catalog")) } catch { throw Console.fail(error, cause: error.endCause) }

        var endpoints = ServiceEndpoints(store: store, rules: configuration.rules, webhookAuthentication: configuration.webhookAuthentication,
                                         apiAuthentication: configuration.apiAuthentication, logger: logger)
        let worker = WorkerSettings(host: settings[.host] ?? ProcessInfo.processInfo.hostName, capacity: configuration.capacity,
                                    leaseMilliseconds: configuration.leaseMilliseconds, executable: Self.ownExecutable(),
                                    childArguments: childArguments(location: location), childEnvironment: ProcessInfo.processInfo.environment)
        var workerSettings = worker
        workerSettings.publisherCapacity = configuration.publisherCapacity
        let supervisor = JobSupervisor(store: store, settings: workerSettings, logger: logger)
        endpoints.jobsChanged = { supervisor.wake() }
        let address = configuration.listen
        let serverBuilder = try configuration.serverBuilder()
        let router = endpoints.router()
        ArchiveWebEndpoints(store: store, dataDirectory: common.dataDirectory, authentication: configuration.webAuthentication,
                            open: configuration.webIsOpen, parseTime: { TimeArgument(argument: $0)?.milliseconds },
                            logger: Logger(label: "recbot.web")).add(to: router)
        var application = Application(
            router: router, server: serverBuilder,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: "recbot"),
            onServerRunning: { channel in
                // One line on standard error that says where (a test or a script reads the port from it).
                let port = channel.localAddress?.port ?? address.port
                FileHandle.standardError.write(Data("recbot serve: listening on \(address.host):\(port)\n".utf8))
            },
            logger: logger)
        // Capacity 0: an archive browser (and API) that records nothing.
        if configuration.capacity > 0 { application.addServices(SupervisorService(supervisor: supervisor)) }
        if let interval = configuration.pruneEveryMilliseconds {
            let retention = RetentionPass(store: store, dataDirectory: common.dataDirectory, host: worker.host,
                                          upload: try PruneCommand.uploadTarget(settings), intervalMilliseconds: interval,
                                          logger: Logger(label: "recbot.retention"))
            application.addServices(RetentionService(pass: retention))
        }
        logger.notice("serving", metadata: ["listen": "\(address.host):\(address.port)", "capacity": "\(configuration.capacity)",
                                            "rules": "\(configuration.rules.rules.count)", "owner": "\(worker.owner)",
                                            "web": "\(configuration.webIsOpen ? "open to this host" : configuration.webAuthentication.isEmpty ? "closed: no credentials configured" : "credentials required")"])
        try await application.runService()
    }

    /// Where the children write: this process's data directory and catalog, stated outright
    /// so a child never resolves them differently.
    func childArguments(location: CatalogLocation) -> [String] {
        var arguments = ["--data-dir", common.dataDirectory.path]
        if let config = common.config { arguments += ["--config", config] }
        if let catalog = common.catalog { arguments += ["--catalog", catalog] }
        return arguments
    }

    static func ownExecutable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}

/// The retention pass as a service of the application's group: cancelled on shutdown.
struct RetentionService: ServiceLifecycle.Service {
    let pass: RetentionPass

    func run() async {
        await cancelWhenGracefulShutdown { await pass.run() }
    }
}

/// The supervisor as a service of the application's group: on SIGTERM or SIGINT it stops
/// taking jobs, ends its recordings and waits for their results before the process exits.
struct SupervisorService: ServiceLifecycle.Service {
    let supervisor: JobSupervisor

    func run() async {
        await withGracefulShutdownHandler {
            await supervisor.run()
        } onGracefulShutdown: {
            supervisor.shutDown()
        }
    }
}
