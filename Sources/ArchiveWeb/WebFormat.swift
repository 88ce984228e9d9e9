import Foundation

/// How pages show times: UTC, as the catalog keeps them, so a link read anywhere means one moment.
public enum WebFormat {
    public static func time(milliseconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// `1:02:03`, `2:03` or `0:04.5`-style lengths: minutes and seconds, hours when there are any.
    public static func duration(milliseconds: Int64) -> String {
        let total = max(0, milliseconds) / 1000
        let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0 ? String(format: "%d:%02d:%02d", hours, minutes, seconds) : String(format: "%d:%02d", minutes, seconds)
    }

    /// Seconds with one decimal, as media fragments (`#t=`) take them.
    public static func seconds(milliseconds: Int64) -> String {
        let tenths = (max(0, milliseconds) + 50) / 100
        return "\(tenths / 10).\(tenths % 10)"
    }
}
