@testable import Archive
import Foundation
import GRDB
import Testing
import TestSupport

@Suite struct BadInputTests {
    let fixture: Fixture

    init() throws { fixture = try Fixture() }

    @Test(arguments: [
        ["sessions", "list", "--no-such-flag"],
        ["sessions", "list", "--since", "yesterday-ish"],
        ["sessions", "list", "--since", "2026-02-30"],
        ["sessions", "list", "--until", "2026-13-01T00:00:00Z"],
        ["sessions", "list", "--limit", "0"],
        ["sessions", "list", "--limit", "many"],
        ["sessions", "list", "--since", "2026-11-21", "--until", "2026-11-20"],
        ["sessions", "show", "not-an-id"],
        ["sessions", "show", "../../etc/passwd"],
        ["recordings", "list", "--session", "42"],
        ["events", "list"],
        ["events", "list", "--session", Fixture.s1, "--kind", "smoke-signal"],
        ["frobnicate"],
        ["recordings", "show", "not-a-number"],
        ["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--max-recovery-delay", "forever"],
    ])
    func usageErrorsExit64(arguments: [String]) throws {
        let result = try fixture.run(arguments)
        #expect(result.status == 64, "\(arguments) exited \(result.status): \(result.stderr)")
        #expect(!result.stderr.isEmpty)
        #expect(result.stdout.isEmpty)
    }

    @Test func catalogThatIsNotSQLiteIsRefusedAndUntouched() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-bad-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/catalog.sqlite"
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        for command in [["sessions", "list"], ["recordings", "list", "--json"], ["events", "list", "--session", Fixture.s1]] {
            let result = try RecBotBinary.run(command + ["--data-dir", directory])
            #expect(result.status == 74, "\(command): \(result.status)")
            #expect(result.stderr.contains(path) && result.stderr.contains("not an SQLite database"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["catalog.sqlite"])
    }

    /// Every length of time from a flag, the environment or a config file is range-checked
    /// where it is read: a clear error naming it, never a trap (132) at the first use.
    @Test(arguments: [
        (["webhooks", "retry", "--seconds", "10000000000"], [String: String](), Int32(64), "--seconds"),
        (["repair", "--all", "--webhook-seconds", "10000000000"], [:], 64, "--webhook-seconds"),
        (["sessions", "list", "--since", "9223372036854775807ms"], [:], 64, "--since"),
        (["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--webhook-url", "http://127.0.0.1:9/",
          "--webhook-retry-window", "9223372036854775807ms"], [:], 64, "--webhook-retry-window"),
        (["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--webhook-url", "http://127.0.0.1:9/"],
         ["RECBOT_WEBHOOK_RETRY_WINDOW": "9223372036854775807ms"], 78, "RECBOT_WEBHOOK_RETRY_WINDOW"),
        (["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--webhook-url", "http://127.0.0.1:9/",
          "--webhook-retry-window", "400d"], [:], 78, "--webhook-retry-window must be between 1s and 366d"),
        (["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling"], ["RECBOT_CONNECT_TIMEOUT": "banana"], 78, "RECBOT_CONNECT_TIMEOUT"),
        (["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--duration", "3651d"], [:], 64, "--duration"),
    ])
    func aLengthOfTimeOutOfRangeIsAClearError(arguments: [String], environment: [String: String], status: Int32, named: String) throws {
        let result = try fixture.run(arguments, environment: environment)
        #expect(result.status == status && result.stderr.contains(named), "\(arguments) \(environment): \(result.status): \(result.stderr)")
    }

    @Test func aRecoveryDelayOutOfRangeIsAConfigurationError() throws {
        let result = try fixture.run(["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--max-recovery-delay", "50ms"])
        #expect(result.status == 78 && result.stderr.contains("--max-recovery-delay"), "\(result.status): \(result.stderr)")
    }

    /// A Sora token in --metadata on the command line is seen by every user through `ps`: the
    /// join warns (naming the field, never the value); from a file or RECBOT_METADATA it is quiet.
    @Test func aTokenInlineInMetadataIsWarnedAbout() throws {
        let join = ["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--no-rejoin"]
        let inline = try fixture.run(join + ["--metadata", #"{"access_token":"Zs3cr3tQ"}"#])
        #expect(inline.stderr.contains("warning: --metadata on the command line holds a \"access_token\" field"), "\(inline.stderr)")
        #expect(!inline.stderr.contains("Zs3cr3tQ"))
        let jwt = try fixture.run(join + ["--metadata", #"{"x":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"}"#])
        #expect(jwt.stderr.contains("a JSON Web Token"))
        let file = fixture.directory + "/metadata.json"
        try Data(#"{"access_token":"Zs3cr3tQ"}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(try !fixture.run(join + ["--metadata", "@" + file]).stderr.contains("warning: --metadata"))
        #expect(try !fixture.run(join, environment: ["RECBOT_METADATA": #"{"access_token":"Zs3cr3tQ"}"#]).stderr.contains("warning: --metadata"))
        #expect(try !fixture.run(join + ["--metadata", #"{"room":"a"}"#]).stderr.contains("warning"))
    }

    /// Issue 12: a connect timeout of centuries trapped converting its deadline to nanoseconds;
    /// since issue 39 it is refused where it is read (lengths of time have a range).
    @Test func aHugeConnectTimeoutIsAClearErrorNotACrash() throws {
        let result = try fixture.run(["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--connect-timeout", "20000000000"])
        #expect(result.status == 64 && result.stderr.contains("--connect-timeout"), "not a trap: \(result.status) \(result.stderr.suffix(500))")
        let longest = try fixture.run(["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--connect-timeout", "10m"])
        #expect(longest.status == 69, "the longest timeout is a wait: \(longest.status) \(longest.stderr.suffix(500))")
        let upperCase = try fixture.run(["join", "--channel", "c", "--url", "WS://127.0.0.1:9/signaling"])
        #expect(upperCase.status == 69, "URL schemes are case-insensitive: \(upperCase.status) \(upperCase.stderr.suffix(300))")
        let prefix = try fixture.run(["join", "--channel", "c", "--url", "ws://127.0.0.1:9/signaling", "--allow-address", "/"])
        #expect([69, 78].contains(prefix.status), "an empty address prefix is refused, not a trap: \(prefix.status)")
    }

    /// A reader that goes away (`recbot … | head`) ends the command quietly (SIGPIPE's status),
    /// never with Foundation's trap on a failed write.
    @Test func aClosedPipeEndsQuietly() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: RecBotBinary.path)
        process.arguments = ["sessions", "list", "--data-dir", fixture.directory]
        let out = Pipe(), err = Pipe()
        out.fileHandleForReading.closeFile()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 141, "\(process.terminationStatus): \(stderr.prefix(300))")
        #expect(!stderr.contains("Fatal error"))
    }

    @Test func versionAndHelp() throws {
        let version = try RecBotBinary.run(["--version"])
        #expect(version.status == 0 && version.stdout.contains("0.1.0"))
        let help = try RecBotBinary.run(["--help"])
        #expect(help.status == 0 && help.stdout.contains("sessions") && help.stdout.contains("recordings") && help.stdout.contains("events"))
    }
}

@Suite struct StandaloneBinaryTests {
    /// The installed binary carries its migrations: copied alone, it upgrades an old catalog.
    @Test func copiedBinaryMigratesWithoutTheSourceTree() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-alone-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let copy = directory.appendingPathComponent("recbot").path
        // Copied by cp, not in this process: a test running beside this one that starts a child
        // while our copy's descriptor is open for writing hands it to that child, and executing
        // the copy then fails with ETXTBSY ("Text file busy").
        let copied = try runProcess("/bin/cp", [RecBotBinary.path, copy])
        try #require(copied.status == 0, "\(copied.stderrText)")
        let data = directory.appendingPathComponent("data").path
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        // An old catalog, made with the first migration only.
        let queue = try DatabaseQueue(path: data + "/catalog.sqlite")
        try Catalog.migrator(upTo: "0001_catalog").migrate(queue)
        try queue.close()

        // Queries never migrate; they say what to do.
        let query = try RecBotBinary.run(["sessions", "list", "--json", "--data-dir", data], executable: copy)
        #expect(query.status == 74 && query.stderr.contains("older schema") && query.stderr.contains("recbot repair --all"), "\(query.stderr)")
        let result = try RecBotBinary.run(["repair", "--all", "--data-dir", data], executable: copy)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try RecBotBinary.run(["sessions", "list", "--json", "--data-dir", data], executable: copy).status == 0)
        let catalog = try Catalog(path: data + "/catalog.sqlite")
        #expect(try catalog.appliedMigrations() == Catalog.knownMigrations)
    }
}
