import ArgumentParser
import Foundation

/// Settings read from the environment and an optional `KEY=value` file (systemd EnvironmentFile
/// format), so secrets such as metadata tokens stay out of crontab and `ps`.
struct Settings {
    var values: [String: String]

    static func load(environment: [String: String], configPath: String?) throws -> Settings {
        var values: [String: String] = [:]
        if let configPath {
            guard let text = try? String(contentsOfFile: configPath, encoding: .utf8) else {
                throw ValidationError("cannot read config file \(configPath)")
            }
            for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let line = rawLine.trimmingCharacters(in: .whitespaces)
                if line.isEmpty || line.hasPrefix("#") { continue }
                guard let equals = line.firstIndex(of: "="), line[..<equals].hasPrefix("RECBOT_") else {
                    throw ValidationError("\(configPath):\(number + 1): expected RECBOT_NAME=value")
                }
                var value = String(line[line.index(after: equals)...]).trimmingCharacters(in: .whitespaces)
                if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first {
                    value = String(value.dropFirst().dropLast())
                }
                values[String(line[..<equals])] = value
            }
        }
        for (key, value) in environment where key.hasPrefix("RECBOT_") { values[key] = value }  // environment wins
        return Settings(values: values)
    }

    /// The value, when set and not empty.
    subscript(name: SettingName) -> String? { values[name.variable].flatMap { $0.isEmpty ? nil : $0 } }

    /// A list setting (URLs, address prefixes): items separated by commas or spaces.
    func list(_ name: SettingName) -> [String] {
        (self[name] ?? "").split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
    }

    /// An on/off setting: on when `1` or `true`.
    func isOn(_ name: SettingName) -> Bool {
        precondition(name.isSwitch, "\(name.variable) is not a switch")
        return self[name] == "1" || self[name]?.lowercased() == "true"
    }
}

extension Settings {
    /// A length of time from its flag or, failing that, its setting, checked against `range`
    /// (milliseconds): a value that does not parse or lies outside is an error that names the
    /// flag and the range, never ignored, never clamped, never left to overflow later.
    func duration(_ flag: DurationArgument?, _ name: SettingName, range: ClosedRange<Int64>) throws -> Int64? {
        let label = name.flag ?? name.variable
        let value: DurationArgument
        if let flag {
            value = flag
        } else if let text = self[name] {
            guard let parsed = DurationArgument(argument: text) else {
                throw ValidationError("\(name.variable) \(text) is not a duration (45s, 15m, 2h; at most \(DurationArgument.describe(DurationArgument.maximumMilliseconds)))")
            }
            value = parsed
        } else {
            return nil
        }
        guard range.contains(value.milliseconds) else {
            throw ValidationError("\(label) must be between \(DurationArgument.describe(range.lowerBound)) and \(DurationArgument.describe(range.upperBound))")
        }
        return value.milliseconds
    }
}
