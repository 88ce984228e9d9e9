import Foundation
import Testing
import TestSupport
@testable import RecBotCLI

/// Every `RECBOT_*` setting comes from one table (`SettingName`); the options tables in
/// docs/usage.md must list each of them with the flag it pairs with, and nothing else.
@Suite struct SettingsTableTests {
    @Test func theUsageDocumentsEverySettingWithItsFlag() throws {
        let root = repositoryRoot
        let usage = try String(contentsOf: root.appendingPathComponent("docs/usage.md"), encoding: .utf8)
        let byVariable = Dictionary(uniqueKeysWithValues: SettingName.all.map { ($0.variable, $0) })
        var documented = Set<String>()
        for row in usage.split(separator: "\n").map(String.init) where row.hasPrefix("|") {
            let variables = Self.matches(#"RECBOT_[A-Z0-9_]+"#, in: row)
            let flags = Set(Self.matches(#"--[a-z0-9-]+"#, in: row))
            for variable in variables {
                let setting = try #require(byVariable[variable], "docs/usage.md names \(variable), which recbot does not read")
                documented.insert(variable)
                if let flag = setting.flag { #expect(flags.contains(flag), "\(variable) is documented without \(flag): \(row)") }
            }
        }
        let undocumented = SettingName.all.map(\.variable).filter { !documented.contains($0) }
        #expect(undocumented.isEmpty, "not in docs/usage.md's option tables: \(undocumented)")
    }

    /// Help texts, error messages, docs and deploy examples spell names out for people: each
    /// one must be a name recbot reads (a typo there sends an operator to a setting that does nothing).
    @Test func everyNameWrittenAnywhereIsInTheTable() throws {
        let known = Set((SettingName.all + SettingName.serve).map(\.variable))
        // Not settings: the config file's line format, and names the tests' own processes read.
        // A family (`RECBOT_WEBHOOK_*`) is not a name.
        let notSettings: Set<String> = ["RECBOT_NAME", "RECBOT_BINARY", "RECBOT_FUZZ", "RECBOT_FUZZ_SANITIZERS", "RECBOT_TEST_BLOCKING_WIDTH", "RECBOT_TEST_BODY_TIMES", "RECBOT_WEB_SCREENSHOTS"]
        let root = repositoryRoot
        var unknown: [String] = []
        for folder in ["Sources", "docs", "deploy", "README.md"] {
            let base = root.appendingPathComponent(folder)
            let files = (FileManager.default.enumerator(atPath: base.path)?.allObjects as? [String])?.map { base.appendingPathComponent($0) } ?? [base]
            for file in files {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                for name in Set(Self.matches(#"RECBOT_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])"#, in: text)) where !known.contains(name) && !notSettings.contains(name) {
                    unknown.append("\(file.path.dropFirst(root.path.count + 1)): \(name)")
                }
            }
        }
        #expect(unknown.isEmpty, "names recbot does not read: \(unknown)")
    }

    @Test func everyVariableAndFlagIsListedOnce() {
        for table in [SettingName.all, SettingName.serve] {
            let variables = table.map(\.variable)
            #expect(Set(variables).count == variables.count)
            let flags = table.compactMap(\.flag)
            #expect(Set(flags).count == flags.count)
        }
        #expect(Set(SettingName.all.map(\.variable)).isDisjoint(with: SettingName.serve.map(\.variable)))
    }

    /// `recbot serve`'s own settings are documented in docs/service.md, each with its flag.
    @Test func theServiceDocumentsEveryServeSettingWithItsFlag() throws {
        let text = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/service.md"), encoding: .utf8)
        let rows = text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("|") }
        for setting in SettingName.serve {
            let row = rows.first { Self.matches(#"RECBOT_[A-Z0-9_]+"#, in: $0).contains(setting.variable) }
            #expect(row != nil, "\(setting.variable) is not in docs/service.md's settings table")
            if let flag = setting.flag, let row { #expect(row.contains(flag), "\(setting.variable) is documented without \(flag)") }
        }
    }

    @Test func switchesTakeOneOrTrue() throws {
        let settings = try Settings.load(environment: ["RECBOT_INSECURE": "TRUE", "RECBOT_NO_REJOIN": "0", "RECBOT_DELETE_AFTER_UPLOAD": "1"],
                                         configPath: nil)
        #expect(settings.isOn(.insecure) && !settings.isOn(.noRejoin) && settings.isOn(.deleteAfterUpload) && !settings.isOn(.failOnInterruption))
    }

    @Test func listsSplitOnCommasAndSpaces() throws {
        let settings = try Settings.load(environment: ["RECBOT_URLS": "wss://a/signaling, wss://b/signaling wss://c/signaling"], configPath: nil)
        #expect(settings.list(.urls) == ["wss://a/signaling", "wss://b/signaling", "wss://c/signaling"])
        #expect(settings.list(.allowAddresses).isEmpty)
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        let expression = try! NSRegularExpression(pattern: pattern)
        return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
    }
}
