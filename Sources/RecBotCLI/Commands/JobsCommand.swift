import Archive
import ArgumentParser
import Foundation
import Service

/// `recbot jobs`: the recordings `recbot serve` was asked for, on any worker of the fleet.
struct JobsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobs",
        abstract: "List, show and stop the recording jobs of `recbot serve`.",
        subcommands: [List.self, Show.self, Stop.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List jobs, newest first.")

        @OptionGroup var common: CommonOptions
        @OptionGroup var output: OutputOptions
        @Option(help: ArgumentHelp("Only jobs in these states (queued, running, ended, cancelled; comma separated).", valueName: "states"))
        var state: String?
        @Option(help: ArgumentHelp("Only this channel's.", valueName: "id")) var channel: String?
        @Option(help: "At most this many.") var limit: Int = 100

        func validate() throws {
            if limit < 1 { throw ValidationError("--limit must be at least 1") }
            _ = try states()
        }

        func states() throws -> [JobState]? {
            guard let state else { return nil }
            return try state.split(separator: ",").map {
                guard let value = JobState(rawValue: String($0)) else { throw ValidationError("--state \($0) is not queued, running, ended or cancelled") }
                return value
            }
        }

        func run() throws {
            let filter = JobFilter(states: try states(), channelID: channel, limit: limit)
            let jobs = try common.openCatalogForQuery()?.query { c throws(CatalogError) in try c.jobs(filter) } ?? []
            if output.json {
                Console.print(JobView.encode(jobs.map(JobView.init)))
                return
            }
            var table = TextTable([("JOB", .left), ("CHANNEL", .left), ("STATE", .left), ("CREATED", .left), ("WORKER", .left),
                                   ("CLAIMS", .right), ("EXIT", .right), ("END", .left)])
            for job in jobs {
                table.add([job.id, job.channelID, job.stopRequestedAt != nil && job.state == .running ? "stopping" : job.state.rawValue,
                           HumanFormat.localTime(milliseconds: job.createdAt), job.workerHost, String(job.fence), job.exitStatus.map(String.init),
                           job.endReason])
            }
            Console.print(table.rendered())
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one job (JSON).")

        @OptionGroup var common: CommonOptions
        @Argument(help: ArgumentHelp("The job's id (also its recording's session id).", valueName: "id")) var id: String

        func run() throws {
            guard let job = try common.openCatalogForQuery()?.query({ c throws(CatalogError) in try c.job(id: id) }) else {
                throw Console.fail("no job \(id.prefix(40))", cause: .notFound)
            }
            Console.print(JobView.encode(JobView(job)))
        }
    }

    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stop a job: a queued one is cancelled, a running one ends at its worker's next heartbeat.")

        @OptionGroup var common: CommonOptions
        @Argument(help: ArgumentHelp("The job's id.", valueName: "id")) var id: String

        func run() throws {
            guard let catalog = try common.openCatalogForWriting() else { throw CommandEnd(cause: .notFound) }
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let stopped = try catalog.query { c throws(CatalogError) in try c.requestJobStop(id: id, soraSessionID: nil, at: now, reason: "command line") }
            guard let job = stopped.first else {
                let existing = try catalog.query { c throws(CatalogError) in try c.job(id: id) }
                guard let existing else { throw Console.fail("no job \(id.prefix(40))", cause: .notFound) }
                Console.print("job \(id) is \(existing.state.rawValue)\(existing.stopRequestedAt != nil ? " (stop asked already)" : ""): nothing to stop")
                return
            }
            Console.print(job.state == .cancelled ? "job \(id) cancelled" : "job \(id) stopping (its worker ends the recording within a heartbeat)")
        }
    }
}
