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
    let process = Process()
    process.executableURL = URL(fileURLWithPath: argv[0])
    process.arguments = Array(argv.dropFirst())
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw CommandFailed(command: argv, status: process.terminationStatus, output: text) }
    return text
}
