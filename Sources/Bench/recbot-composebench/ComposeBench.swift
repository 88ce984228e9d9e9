import ArgumentParser
import CodecBindings
import Composition
import Foundation

/// `recbot compose` against FFmpeg's equivalent filter graph on the same files, side by side
/// in one run (issue 44's target: 4 senders of 640x360@30, 60 s, a 2×2 grid at 1280x720,
/// VP8 + Opus, at ≥ 2× real time and within 1.3× FFmpeg's CPU time). The senders' files are
/// made once with FFmpeg (test patterns, tones) into --directory.
@main
struct ComposeBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "recbot-composebench", abstract: "Time recbot compose beside FFmpeg's xstack + amix.")

    @Option(help: "Seconds of each sender.") var seconds = 60
    @Option(help: "Senders (2×2 grid for 4).") var senders = 4
    @Option(help: "Where the senders' files are made (and reused).") var directory = FileManager.default.temporaryDirectory.appendingPathComponent("recbot-composebench").path
    @Option(help: "Runs of each (the one with the median CPU time is reported).") var runs = 1

    func run() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let inputs = try (0..<senders).map { try makeSender($0) }
        print("\(senders) senders, 640x360@30 VP8 + Opus, \(seconds) s each; output 1280x720@30 VP8 2500 kbit/s (realtime, cpu-used 8, 2 threads) + Opus 96 kbit/s")
        var ours: [Measurement] = [], theirs: [Measurement] = []
        for run in 0..<runs {
            ours.append(try measure { try composeWithRecbot(inputs, out: directory + "/recbot-\(run).webm") })
            theirs.append(try measure { try composeWithFFmpeg(inputs, out: directory + "/ffmpeg-\(run).webm") })
        }
        let (recbot, ffmpeg) = (ours.sorted { $0.cpu < $1.cpu }[runs / 2], theirs.sorted { $0.cpu < $1.cpu }[runs / 2])
        print(String(format: "recbot compose: %.1f s wall (%.2f× real time), %.1f s CPU", recbot.wall, Double(seconds) / recbot.wall, recbot.cpu))
        print(String(format: "ffmpeg xstack + amix: %.1f s wall (%.2f× real time), %.1f s CPU", ffmpeg.wall, Double(seconds) / ffmpeg.wall, ffmpeg.cpu))
        print(String(format: "CPU ratio recbot ÷ ffmpeg: %.2f", recbot.cpu / ffmpeg.cpu))
    }

    struct Measurement { var wall: Double; var cpu: Double }

    /// Wall time, and the CPU time of this process and its children (FFmpeg) during `body`.
    func measure(_ body: () throws -> Void) throws -> Measurement {
        let (cpuBefore, wallBefore) = (Self.cpuSeconds(), Date())
        try body()
        return Measurement(wall: Date().timeIntervalSince(wallBefore), cpu: Self.cpuSeconds() - cpuBefore)
    }

    static func cpuSeconds() -> Double {
        var total = 0.0
        for who in [RUSAGE_SELF, RUSAGE_CHILDREN] {
            var usage = rusage()
            getrusage(who.rawValue, &usage)
            total += Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        }
        return total
    }

    func makeSender(_ index: Int) throws -> String {
        let path = directory + "/sender-\(index)-\(seconds)s.webm"
        if FileManager.default.fileExists(atPath: path) { return path }
        try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=\(seconds)",
                         "-f", "lavfi", "-i", "sine=frequency=\(300 + index * 110):sample_rate=48000:duration=\(seconds)",
                         "-c:v", "libvpx", "-b:v", "800k", "-deadline", "realtime", "-cpu-used", "8", "-g", "90",
                         "-c:a", "libopus", "-b:a", "32k", "-ac", "1", path])
        return path
    }

    func composeWithRecbot(_ inputs: [String], out: String) throws {
        var settings = CompositionSettings()
        settings.videoBitrateKbps = 2_500
        let sources = try inputs.enumerated().map { index, path in
            (connectionID: "sender\(index)", files: [try SourceFile(path: path, start: 0, durationMilliseconds: Int64(seconds) * 1_000)])
        }
        _ = try Composer(senders: sources, settings: settings).run(to: out)
    }

    func composeWithFFmpeg(_ inputs: [String], out: String) throws {
        let count = inputs.count
        var columns = 1
        while columns * columns < count { columns += 1 }
        let layout = (0..<count).map { index in
            let (row, column) = (index / columns, index % columns)
            return "\(column * 640)_\(row * 360)"
        }.joined(separator: "|")
        let video = (0..<count).map { "[\($0):v]" }.joined() + "xstack=inputs=\(count):layout=\(layout):fill=black,scale=1280:720[v]"
        let audio = (0..<count).map { "[\($0):a]" }.joined() + "amix=inputs=\(count):normalize=0,alimiter=limit=0.98[a]"
        try Self.ffmpeg(inputs.flatMap { ["-i", $0] } + ["-filter_complex", video + ";" + audio, "-map", "[v]", "-map", "[a]",
                        "-c:v", "libvpx", "-b:v", "2500k", "-deadline", "realtime", "-cpu-used", "8", "-threads", "2", "-g", "60",
                        "-c:a", "libopus", "-b:a", "96k", "-ac", "2", out])
    }

    static func ffmpeg(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-v", "error", "-y", "-nostdin"] + arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ValidationError("ffmpeg failed (\(process.terminationStatus)): \(arguments.joined(separator: " "))") }
    }
}
