import ArgumentParser
import RecBot
import Recorder

/// How the recording is laid out on disk, as Sora's recording API takes it: time-split parts
/// and the operator's metadata.
struct SplitArguments: ParsableArguments {
    @Option(name: .customLong("split-duration"), help: ArgumentHelp(
        "Also write each sender in parts of this many seconds on the session's timeline (split-archive-<id>_NNNN.webm).",
        valueName: "seconds"))
    var splitDuration: Int64?
    @Flag(name: .customLong("split-only"), help: "With --split-duration: only the parts, no whole-file archive-<id>.webm.")
    var splitOnly = false
    @Option(name: .customLong("recording-metadata"), help: ArgumentHelp(
        "JSON stored with the recording and returned as recording_metadata in its report and sidecars.", valueName: "json|@file"))
    var recordingMetadata: String?

    /// The split policy and metadata the flags and settings give (flags first).
    func apply(to options: inout JoinOptions, settings: Settings) throws {
        let seconds: Int64?
        if let splitDuration {
            seconds = splitDuration
        } else if let text = settings[.splitDuration] {
            guard let value = Int64(text) else { throw ValidationError("\(SettingName.splitDuration.variable) \(text) is not a number of seconds") }
            seconds = value
        } else {
            seconds = nil
        }
        let only = splitOnly || settings.isOn(.splitOnly)
        if let seconds {
            guard SplitPolicy.secondsRange.contains(seconds) else {
                throw ValidationError("--split-duration must be between \(SplitPolicy.secondsRange.lowerBound) and \(SplitPolicy.secondsRange.upperBound) seconds")
            }
            options.split = SplitPolicy(seconds: seconds, only: only)
        } else if only {
            throw ValidationError("--split-only needs --split-duration")
        }
        options.recordingMetadata = try JoinCommand.jsonArgument(recordingMetadata ?? settings[.recordingMetadata], name: "recording-metadata")
    }
}
