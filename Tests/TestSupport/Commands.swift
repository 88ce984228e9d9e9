import Foundation

/// A command a test runs to set something up (openssl, ip, nft): its output, or an error that
/// carries the output when it exits non-zero. Not for servers that keep running.
public struct CommandFailed: Error, CustomStringConvertible {
    public var command: [String]
    public var status: Int32
    public var output: String
    public var description: String { "\(command.joined(separator: " ")) exited \(status): \(output)" }
}

@discardableResult
public func runChecked(_ argv: [String]) throws -> String {
    let result = try runProcess(argv[0], Array(argv.dropFirst()))
    let text = result.stdoutText + result.stderrText
    guard result.status == 0 else { throw CommandFailed(command: argv, status: result.status, output: text) }
    return text
}
