import ArgumentParser
import Foundation

/// The name a data directory's recordings are cataloged under, for the commands that write or
/// look for files: join, verify, repair. A fleet shares one catalog; each file is on one disk.
struct HostOptions: ParsableArguments {
    @Option(name: .customLong("host"), help: ArgumentHelp(
        "The name this data directory's recordings are cataloged under (default: the machine's host name). Set it where that name changes with every run, as in a Kubernetes pod (the volume's name). Overrides RECBOT_HOST.",
        valueName: "name"))
    var host: String?

    func name(settings: Settings) throws -> String {
        let name = host ?? settings[.host] ?? ProcessInfo.processInfo.hostName
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw ValidationError("--host / RECBOT_HOST must be printable ASCII without spaces")
        }
        return name
    }
}
