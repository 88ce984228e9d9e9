// recbot-demo: records a synthetic sender (libvpx VP8 test pattern + libopus tone) into the
// data directory exactly as a session would be catalogued, so a fresh machine can see
// `recbot sessions list` / `recordings list` work before `recbot join` exists.
import Archive
import ArgumentParser
import CodecBindings
import Foundation
import RecBotCLI
import WebM

@main
struct RecBotDemo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recbot-demo",
        abstract: "Write a synthetic recording (VP8 + Opus WebM) and its catalog entries.")

    @Option(name: .customLong("data-dir"), help: "Data directory (default: RECBOT_DATA_DIR, then recbot's default).")
    var dataDir: String?

    @Option(help: "Length of the synthetic recording in seconds.") var seconds: Int = 5
    @Option(help: "Channel id to record the demo under.") var channel: String = "recbot-demo"

    func validate() throws {
        guard (1...600).contains(seconds) else { throw ValidationError("--seconds must be between 1 and 600") }
    }

    func run() throws {
        RecBotLogging.bootstrap()
        let directory = DataDirectory.resolve(flag: dataDir, environment: ProcessInfo.processInfo.environment, isRoot: getuid() == 0)
        let dataDirectory = directory.path

        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let session = ULID.generate(now: now)
        let sender = ULID.generate(now: now)
        let catalog = try Catalog(path: directory.catalogPath)
        try catalog.insertSession(SessionRecord(
            id: session.string, channelID: channel, startedAt: Int64(now), connectionID: ULID.generate(now: now).string,
            signalingURL: "synthetic://recbot-demo", recbotVersion: "demo", hostname: ProcessInfo.processInfo.hostName,
            pid: Int(getpid())))
        try catalog.upsertConnection(ConnectionRecord(
            sessionID: session.string, connectionID: sender.string, firstSeenAt: Int64(now), role: "sendonly",
            metadata: #"{"synthetic":true}"#))
        try catalog.insertEvent(EventRecord(
            sessionID: session.string, kind: .notify, eventType: "connection.created", receivedAt: Int64(now),
            payload: .json(#"{"type":"notify","event_type":"connection.created","role":"sendonly","connection_id":"\#(sender.string)","metadata":{"synthetic":true}}"#)))

        let relativePath = "recordings/\(session.string)/archive-\(sender.string).webm"
        let path = dataDirectory + "/" + relativePath
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var recording = try catalog.insertRecording(RecordingRecord(
            sessionID: session.string, connectionID: sender.string, path: relativePath, videoCodec: "VP8",
            audioCodec: "OPUS", startedAt: Int64(now)))

        let (width, height, fps) = (320, 240, 30)
        let video = try VPXEncoder(codec: .vp8, width: width, height: height, framesPerSecond: fps)
        let audio = try OpusEncoder(channels: 2)
        var uid = [UInt8](repeating: 0, count: 16)
        for index in uid.indices { uid[index] = UInt8.random(in: 0...255) }
        var muxer = try WebMMuxer(configuration: WebMMuxerConfiguration(
            video: WebMVideoTrack(codec: .vp8, width: width, height: height),
            audio: WebMAudioTrack(opusHead: OpusHead(channelCount: 2, preSkip: UInt16(audio.lookahead))),
            segmentUID: uid))
        let file = try WebMFileWriter(creatingAt: path)

        // Interleave by time: one video frame every 1/30 s, one Opus frame every 20 ms.
        var videoIndex = 0, audioIndex = 0
        let videoFrames = seconds * fps, audioFrames = seconds * 50
        while videoIndex < videoFrames || audioIndex < audioFrames {
            let videoTime = Int64(videoIndex) * 1_000_000_000 / Int64(fps)
            let audioTime = Int64(audioIndex) * 20_000_000
            if videoIndex < videoFrames && (audioIndex >= audioFrames || videoTime <= audioTime) {
                let picture = I420Image.testPattern(width: width, height: height, frame: videoIndex)
                for frame in try video.encode(picture, pts: Int64(videoIndex)) {
                    try file.apply(muxer.write(WebMFrame(track: .video, timestampNanoseconds: videoTime, isKeyframe: frame.isKeyframe, data: frame.data)))
                }
                videoIndex += 1
            } else {
                let packet = try audio.encode(OpusEncoder.tone(frequency: 440, frame: audioIndex, channels: 2))
                try file.apply(muxer.write(WebMFrame(track: .audio, timestampNanoseconds: audioTime, isKeyframe: true, data: packet)))
                audioIndex += 1
            }
        }
        let durationMs = Int64(seconds) * 1000
        try file.apply(muxer.finalize(durationMilliseconds: durationMs))
        try file.sync()
        try file.close()

        recording.endedAt = Int64(now) + durationMs
        recording.durationMs = durationMs
        recording.bytes = Int64(muxer.statistics.bytes)
        recording.videoFrames = Int64(muxer.statistics.videoFrames)
        recording.audioFrames = Int64(muxer.statistics.audioFrames)
        recording.status = .complete
        try catalog.updateRecording(recording)
        try catalog.endSession(id: session.string, endedAt: Int64(now) + durationMs, endReason: "demo-complete", exitStatus: 0)
        print("recbot-demo: session \(session.string): wrote \(path) (\(muxer.statistics.bytes) bytes, \(muxer.statistics.videoFrames) video / \(muxer.statistics.audioFrames) audio frames)")
    }
}
