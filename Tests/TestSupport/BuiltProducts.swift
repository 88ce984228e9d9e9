import Foundation

/// The one way tests find the package's executables (`recbot`, `recbot-loadgen`…): beside the
/// test bundle in the build directory, whichever configuration built it. `RECBOT_BINARY`
/// points the `recbot` tests at another binary (an installed one, a release build).
public func builtProduct(_ name: String) -> String {
    if name == "recbot", let override = ProcessInfo.processInfo.environment["RECBOT_BINARY"] { return override }
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    while directory.path != "/" {
        let candidate = directory.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return name  // from PATH, as a last resort
}

/// An installed program found on PATH (a PyPI wheel's binary lands wherever pip put it), if any.
public func executableOnPath(_ name: String) -> String? {
    for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// The repository's root (for its docs and scripts).
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
