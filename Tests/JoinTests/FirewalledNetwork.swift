import Foundation
import Glibc
import TestSupport

/// A network namespace whose only way out is a veth link to this host, with a firewall
/// (nftables, inside the namespace): one that drops every UDP datagram in and out (the
/// corporate network that forces a recorder onto TURN over TCP or TLS), and a blackout that
/// drops everything for a while (a dead uplink: no RST, no ICMP, nothing). A process runs in
/// it through `launcher`. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2 and
/// nftables; the tests that use it are skipped where the machine does not allow it.
struct FirewalledNetwork {
    let name: String
    let hostLink: String
    /// This host's end of the link, where servers the namespace must reach listen.
    let hostAddress: String
    /// The namespace's end of the link.
    let clientAddress: String
    static let table = "recbot_block_udp"
    static let blackoutTable = "recbot_blackout"

    static let isAvailable: Bool = {
        guard getuid() == 0, ["/usr/sbin/ip", "/usr/sbin/nft"].allSatisfy(FileManager.default.isExecutableFile(atPath:)) else { return false }
        removeLeftovers()
        // A container may be root yet lack the capabilities, or the kernel nftables: try once.
        let probe = "recbot-\(getpid())-probe"
        guard (try? runChecked(["/usr/sbin/ip", "netns", "add", probe])) != nil else { return false }
        defer { _ = try? runChecked(["/usr/sbin/ip", "netns", "del", probe]) }
        return (try? runChecked(["/usr/sbin/ip", "netns", "exec", probe, "/usr/sbin/nft", "add", "table", "inet", FirewalledNetwork.table])) != nil
    }()

    /// Namespaces a killed test run left (named `recbot-<pid>-…` for a pid that is gone), with
    /// the veth pairs inside them.
    private static func removeLeftovers() {
        let listing = (try? runChecked(["/usr/sbin/ip", "netns", "list"])) ?? ""
        for line in listing.split(separator: "\n") {
            let name = String(line.split(separator: " ").first ?? "")
            let parts = name.split(separator: "-")
            guard parts.count >= 3, parts[0] == "recbot", let pid = Int32(parts[1]), kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = try? runChecked(["/usr/sbin/ip", "netns", "del", name])
        }
    }

    /// `blockingUDP`: UDP is dropped for the namespace's whole life (else nothing is, until a blackout).
    init(blockingUDP: Bool = true) throws {
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        name = "recbot-\(getpid())-\(tag)"
        hostLink = "rbh\(tag)"
        // A /30 in 198.18.0.0/15 (RFC 2544's benchmarking range, which no real network routes,
        // unlike 10/8 that VPNs and clusters use), picked at random so parallel tests differ.
        let subnet = UInt32(198 << 24 | 18 << 16) + UInt32.random(in: 0..<(1 << 15)) * 4
        hostAddress = Self.dotted(subnet + 1)
        clientAddress = Self.dotted(subnet + 2)
        let rules = """
            table inet \(Self.table) {
                chain input { type filter hook input priority 0; policy accept; meta l4proto udp counter drop; }
                chain output { type filter hook output priority 0; policy accept; meta l4proto udp counter drop; }
            }
            """
        let ruleFile = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).nft").path
        try rules.write(toFile: ruleFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: ruleFile) }
        let clientLink = "rbc\(tag)"
        let inside = ["/usr/sbin/ip", "-n", name]
        do {
            try runChecked(["/usr/sbin/ip", "netns", "add", name])
            try runChecked(["/usr/sbin/ip", "link", "add", hostLink, "type", "veth", "peer", "name", clientLink, "netns", name])
            try runChecked(["/usr/sbin/ip", "addr", "add", "\(hostAddress)/30", "dev", hostLink])
            try runChecked(["/usr/sbin/ip", "link", "set", hostLink, "up"])
            try runChecked(inside + ["link", "set", "lo", "up"])
            try runChecked(inside + ["addr", "add", "\(clientAddress)/30", "dev", clientLink])
            try runChecked(inside + ["link", "set", clientLink, "up"])
            if blockingUDP { try runChecked(launcher + ["/usr/sbin/nft", "-f", ruleFile]) }
        } catch {
            remove()
            throw error
        }
    }

    /// Prefix for a command that runs inside the namespace.
    var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    /// UDP datagrams the firewall dropped so far, both ways: proof that something tried.
    func droppedUDPDatagrams() throws -> Int {
        let listing = try runChecked(launcher + ["/usr/sbin/nft", "list", "table", "inet", Self.table])
        return listing.split(separator: "\n").compactMap { line -> Int? in
            let words = line.split(separator: " ")
            guard let index = words.firstIndex(of: "packets"), index + 1 < words.count else { return nil }
            return Int(words[index + 1])
        }.reduce(0, +)
    }

    /// From now on every packet in or out of the namespace (but its loopback) is dropped, silently.
    func startBlackout() throws {
        let rules = """
            table inet \(Self.blackoutTable) {
                chain input { type filter hook input priority -10; policy accept; iifname != "lo" counter drop; }
                chain output { type filter hook output priority -10; policy accept; oifname != "lo" counter drop; }
            }
            """
        let ruleFile = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-blackout.nft").path
        try rules.write(toFile: ruleFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: ruleFile) }
        try runChecked(launcher + ["/usr/sbin/nft", "-f", ruleFile])
    }

    func endBlackout() throws {
        try runChecked(launcher + ["/usr/sbin/nft", "delete", "table", "inet", Self.blackoutTable])
    }

    /// A blackout `after` seconds from now, lasting `seconds`, on a thread of its own.
    func scheduleBlackout(after delay: Double, for seconds: Double) {
        Thread {
            Thread.sleep(forTimeInterval: delay)
            try? startBlackout()
            Thread.sleep(forTimeInterval: seconds)
            try? endBlackout()
        }.start()
    }

    func remove() {
        // Deleting one end of a veth pair deletes both; the namespace goes with its last process.
        _ = try? runChecked(["/usr/sbin/ip", "link", "del", hostLink])
        _ = try? runChecked(["/usr/sbin/ip", "netns", "del", name])
    }

    private static func dotted(_ address: UInt32) -> String {
        [24, 16, 8, 0].map { String((address >> UInt32($0)) & 0xFF) }.joined(separator: ".")
    }
}
