import Archive
import ArgumentParser
import Foundation
import SystemClock
import WireCoding

/// A length of time: `45s`, `15m`, `2h`, `3d`, `1w`, `1h30m`; a bare number is seconds. At most
/// ten years: any such length added to a wall-clock time in milliseconds, or turned into
/// nanoseconds on a monotonic clock, stays far inside Int64, so no later arithmetic can trap.
public struct DurationArgument: ExpressibleByArgument, Sendable, Equatable {
    public static let maximumMilliseconds: Int64 = 3_650 * 86_400_000

    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init?(argument: String) {
        guard let parsed = Self.parse(argument), parsed <= Self.maximumMilliseconds else { return nil }
        milliseconds = parsed
    }

    /// A length as a person writes it: `250ms`, `90s`, `15m`, `2h`, `3650d`.
    static func describe(_ milliseconds: Int64) -> String {
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] where milliseconds >= size && milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    private static func parse(_ argument: String) -> Int64? {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        guard !text.isEmpty, text.count <= 32 else { return nil }
        if let seconds = Int64(text) {
            guard seconds >= 0, seconds <= Int64.max / 1000 else { return nil }
            return seconds * 1000
        }
        if text.hasSuffix("ms"), let value = Int64(text.dropLast(2)), value >= 0 {
            return value
        }
        let unitMilliseconds: [Character: Int64] = ["s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000]
        var total: Int64 = 0
        var digits = ""
        for character in text {
            if character.isASCII && character.isNumber {
                digits.append(character)
            } else if let unit = unitMilliseconds[character], let value = Int64(digits) {
                let (product, overflow) = value.multipliedReportingOverflow(by: unit)
                guard !overflow else { return nil }
                let (sum, overflow2) = total.addingReportingOverflow(product)
                guard !overflow2 else { return nil }
                total = sum
                digits = ""
            } else {
                return nil
            }
        }
        guard digits.isEmpty else { return nil }
        return total
    }
}

/// A point in time for --since / --until: RFC 3339 (`2026-11-22T01:00:00Z`), a local date or
/// date-time (`2026-11-22`, `2026-11-22 10:00`), or an age (`24h`, `7d` = that long ago).
public struct TimeArgument: ExpressibleByArgument, Sendable, Equatable {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init?(argument: String) {
        self.init(argument, now: SystemTimeSource().wallClockMilliseconds())
    }

    public init?(_ text: String, now: Int64) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed == "now" {
            milliseconds = now
            return
        }
        if let age = DurationArgument(argument: trimmed), trimmed.contains(where: \.isLetter) {
            milliseconds = now - age.milliseconds
            return
        }
        guard let parsed = TimeArgument.parseDateTime(trimmed) else { return nil }
        milliseconds = parsed
    }

    private static let pattern = try? NSRegularExpression(
        pattern: #"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?(Z|z|[+-]\d{2}:?\d{2})?$"#)

    static func parseDateTime(_ text: String) -> Int64? {
        let range = NSRange(text.startIndex..., in: text)
        guard let match = pattern?.firstMatch(in: text, range: range) else { return nil }
        func group(_ index: Int) -> String? {
            guard let r = Range(match.range(at: index), in: text) else { return nil }
            return String(text[r])
        }
        guard let year = Int(group(1)!), let month = Int(group(2)!), let day = Int(group(3)!) else { return nil }
        let hour = group(4).flatMap(Int.init) ?? 0
        let minute = group(5).flatMap(Int.init) ?? 0
        let second = group(6).flatMap(Int.init) ?? 0
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
              (0...60).contains(second)
        else { return nil }
        let fraction = group(7).flatMap { digits in Int64(digits.padding(toLength: 3, withPad: "0", startingAt: 0).prefix(3)) } ?? 0

        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds: Int64
        if let zone = group(8) {
            var utc = parts
            seconds = Int64(timegm(&utc)) - offsetSeconds(zone)
        } else {
            parts.tm_isdst = -1
            seconds = Int64(mktime(&parts))
        }
        // Reject dates that the C library normalised (e.g. February 30).
        var check = tm()
        var back = time_t(group(8) != nil ? seconds + offsetSeconds(group(8)!) : seconds)
        if group(8) != nil { gmtime_r(&back, &check) } else { localtime_r(&back, &check) }
        guard Int(check.tm_mday) == day, Int(check.tm_mon) == month - 1 else { return nil }
        return seconds * 1000 + fraction
    }

    private static func offsetSeconds(_ zone: String) -> Int64 {
        guard zone != "Z", zone != "z" else { return 0 }
        let sign: Int64 = zone.hasPrefix("-") ? -1 : 1
        let digits = zone.dropFirst().filter(\.isNumber)
        let hours = Int64(digits.prefix(2)) ?? 0
        let minutes = Int64(digits.suffix(2)) ?? 0
        return sign * (hours * 3600 + minutes * 60)
    }
}

/// A session id given on the command line: must be a well-formed ULID (case-insensitive).
public struct ULIDArgument: ExpressibleByArgument, Sendable, Equatable {
    public var value: String

    public init?(argument: String) {
        guard let id = ULID(argument.uppercased()) else { return nil }
        value = id.string
    }
}

/// A place in a session for `compose --from/--to`: an offset into it (`90s`, `1m30s`, a bare
/// number of seconds) or a wall-clock time (RFC 3339, or a local date-time as `--since` takes),
/// which becomes the offset from the session's start.
public enum SessionMomentArgument: ExpressibleByArgument, Sendable, Equatable {
    case offset(Int64)
    case time(Int64)

    public init?(argument: String) {
        if let offset = DurationArgument(argument: argument) {
            self = .offset(offset.milliseconds)
        } else if let time = TimeArgument.parseDateTime(argument.trimmingCharacters(in: .whitespaces)) {
            self = .time(time)
        } else {
            return nil
        }
    }

    /// Milliseconds into a session that started at `start` (a time before it is its start).
    public func offset(sessionStart start: Int64) -> Int64 {
        switch self {
        case .offset(let milliseconds): milliseconds
        case .time(let time): max(0, CatalogTime.span(from: start, to: time) ?? 0)
        }
    }
}
