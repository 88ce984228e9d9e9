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
