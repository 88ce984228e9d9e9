import Foundation
import Glibc

/// A network namespace whose only way out is a veth link to this host, with a firewall
/// (nftables, inside the namespace) that drops every UDP datagram in and out: the corporate
/// network that forces a recorder onto TURN over TCP or TLS. A process runs in it through
/// `launcher`. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), iproute2 and nftables; the
/// tests that use it are skipped where the machine does not allow it.
struct UDPBlockedNetwork {
    let name: String
    let hostLink: String
    /// This host's end of the link, where servers the namespace must reach listen.
    let hostAddress: String
    /// The namespace's end of the link.
    let clientAddress: String
    static let table = "recbot_block_udp"

    static let isAvailable: Bool = {
        guard getuid() == 0, ["/usr/sbin/ip", "/usr/sbin/nft"].allSatisfy(FileManager.default.isExecutableFile(atPath:)) else { return false }
        // A container may be root yet lack the capabilities, or the kernel nftables: try once.
        let probe = "recbot-probe-\(getpid())"
        guard (try? UDPBlockedNetwork.run(["/usr/sbin/ip", "netns", "add", probe])) != nil else { return false }
        defer { _ = try? UDPBlockedNetwork.run(["/usr/sbin/ip", "netns", "del", probe]) }
        return (try? UDPBlockedNetwork.run(["/usr/sbin/ip", "netns", "exec", probe, "/usr/sbin/nft", "add", "table", "inet", UDPBlockedNetwork.table])) != nil
    }()

    init() throws {
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        name = "recbot-\(tag)"
        hostLink = "rbh\(tag)"
        // A /30 in 10.200.0.0/13 that no other test picks at the same moment (names and
        // addresses are per namespace; the host end must not collide).
        let subnet = UInt32(10 << 24 | 200 << 16) + UInt32.random(in: 0..<(1 << 17)) * 4
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
            try Self.run(["/usr/sbin/ip", "netns", "add", name])
            try Self.run(["/usr/sbin/ip", "link", "add", hostLink, "type", "veth", "peer", "name", clientLink, "netns", name])
            try Self.run(["/usr/sbin/ip", "addr", "add", "\(hostAddress)/30", "dev", hostLink])
            try Self.run(["/usr/sbin/ip", "link", "set", hostLink, "up"])
            try Self.run(inside + ["link", "set", "lo", "up"])
            try Self.run(inside + ["addr", "add", "\(clientAddress)/30", "dev", clientLink])
            try Self.run(inside + ["link", "set", clientLink, "up"])
            try Self.run(launcher + ["/usr/sbin/nft", "-f", ruleFile])
        } catch {
            remove()
            throw error
        }
    }

    /// Prefix for a command that runs inside the namespace.
    var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    /// UDP datagrams the firewall dropped so far, both ways: proof that something tried.
    func droppedUDPDatagrams() throws -> Int {
        let listing = try Self.run(launcher + ["/usr/sbin/nft", "list", "table", "inet", Self.table])
        return listing.split(separator: "\n").compactMap { line -> Int? in
            let words = line.split(separator: " ")
            guard let index = words.firstIndex(of: "packets"), index + 1 < words.count else { return nil }
            return Int(words[index + 1])
        }.reduce(0, +)
    }

    func remove() {
        // Deleting one end of a veth pair deletes both; the namespace goes with its last process.
        _ = try? Self.run(["/usr/sbin/ip", "link", "del", hostLink])
        _ = try? Self.run(["/usr/sbin/ip", "netns", "del", name])
    }

    private static func dotted(_ address: UInt32) -> String {
        [24, 16, 8, 0].map { String((address >> UInt32($0)) & 0xFF) }.joined(separator: ".")
    }

    struct CommandFailed: Error, CustomStringConvertible {
        var command: [String]
        var output: String
        var description: String { "\(command.joined(separator: " ")): \(output)" }
    }

    @discardableResult
    static func run(_ argv: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CommandFailed(command: argv, output: text) }
        return text
    }
}
