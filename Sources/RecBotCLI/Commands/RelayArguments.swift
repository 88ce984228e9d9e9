import ArgumentParser
import Foundation
import RecBot
import SoraSignalingCore
import TLSFailure

/// `join`'s TURN flags. Credentials never go on the command line (ps and process titles show
/// it): `--ice-servers` takes `@file`, or the JSON comes from RECBOT_ICE_SERVERS.
struct RelayArguments: ParsableArguments {
    @Option(name: .customLong("ice-servers"), help: ArgumentHelp(
        "ICE servers to use instead of the offer's: @file holding a JSON array [{\"urls\": [\"turn:host:3478?transport=udp\"], \"username\": \"…\", \"credential\": \"…\"}].",
        valueName: "@file"))
    var iceServers: String?
    @Option(name: .customLong("ice-transport-policy"), help: ArgumentHelp(
        "relay: connect only through a TURN relay; all: any path (the default unless the offer says relay).", valueName: "all|relay"))
    var iceTransportPolicy: String?
    @Option(name: .customLong("turn-ca-file"), help: ArgumentHelp(
        "PEM certificates to verify turns: servers with, instead of the system's.", valueName: "path"))
    var turnCAFile: String?

    func settings(_ settings: Settings) throws -> RelaySettings {
        var relay = RelaySettings()
        if let value = iceServers ?? settings[.iceServers] {
            let fromCommandLine = iceServers != nil
            guard !fromCommandLine || value.hasPrefix("@") else {
                throw ValidationError("--ice-servers takes @file (credentials on the command line show in ps); or set RECBOT_ICE_SERVERS")
            }
            var text = value
            if value.hasPrefix("@") {
                let path = String(value.dropFirst())
                guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
                    throw ValidationError("cannot read the ICE servers file \(path)")
                }
                text = contents
            }
            do { relay.iceServers = try ICEServer.list(json: text) } catch { throw ValidationError("ICE servers: \(error)") }
        }
        if let policy = iceTransportPolicy ?? settings[.iceTransportPolicy] {
            switch policy.lowercased() {
            case "relay": relay.relayOnly = true
            case "all": relay.relayOnly = false
            default: throw ValidationError("--ice-transport-policy \(policy): expected all or relay")
            }
        }
        if let path = turnCAFile ?? settings[.turnCAFile] {
            if let problem = TLSFailure.problem(withTrustFile: path) { throw ValidationError("--turn-ca-file: \(problem)") }
            relay.caFile = path
        }
        return relay
    }
}
