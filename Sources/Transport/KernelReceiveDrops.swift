import Foundation

/// The kernel's own count of datagrams it dropped on recbot's sockets because their receive
/// buffer was full (the `drops` column of /proc/net/udp and udp6): what the receive backlog's
/// thread could not prevent, e.g. when it got no CPU. Sockets are matched by local port (each
/// transport binds its own ephemeral ports).
public enum KernelReceiveDrops {
    public static let tables = ["/proc/net/udp", "/proc/net/udp6"]

    /// The drops of the sockets bound to `ports`, summed; nil where /proc cannot be read.
    public static func read(ports: Set<UInt16>) -> Int? {
        let texts = tables.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }
        guard !texts.isEmpty else { return nil }
        return texts.reduce(0) { $0 + parse($1, ports: ports) }
    }

    /// The network namespace's receive-buffer overflows, IPv4 and IPv6 (`RcvbufErrors` in
    /// /proc/net/snmp and snmp6): unlike a socket's `drops`, they leave out what a socket filter
    /// dropped (`PausedVideoFilter`). Nil where neither can be read.
    public static func namespaceOverflows() -> Int? {
        let v4 = (try? String(contentsOfFile: "/proc/net/snmp", encoding: .utf8)).flatMap(parseSNMP)
        let v6 = (try? String(contentsOfFile: "/proc/net/snmp6", encoding: .utf8)).flatMap(parseSNMP6)
        guard v4 != nil || v6 != nil else { return nil }
        return (v4 ?? 0) + (v6 ?? 0)
    }

    /// `RcvbufErrors` of the two `Udp:` lines (names, then values).
    static func parseSNMP(_ text: String) -> Int? {
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("Udp: ") }.map { $0.split(separator: " ") }
        guard rows.count >= 2, let column = rows[0].firstIndex(of: "RcvbufErrors"), column < rows[1].count else { return nil }
        return Int(rows[1][column])
    }

    /// The `Udp6RcvbufErrors` line (a name and a value).
    static func parseSNMP6(_ text: String) -> Int? {
        for line in text.split(separator: "\n") {
            let fields = line.split(omittingEmptySubsequences: true) { $0 == " " || $0 == "\t" }
            if fields.count == 2, fields[0] == "Udp6RcvbufErrors" { return Int(fields[1]) }
        }
        return nil
    }

    /// One table's drops for `ports`; lines it cannot read are skipped.
    public static func parse(_ table: String, ports: Set<UInt16>) -> Int {
        var drops = 0
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 13, let colon = fields[1].lastIndex(of: ":"),
                  let port = UInt16(fields[1][fields[1].index(after: colon)...], radix: 16), ports.contains(port),
                  let count = Int(fields[fields.count - 1]) else { continue }
            drops += count
        }
        return drops
    }
}
