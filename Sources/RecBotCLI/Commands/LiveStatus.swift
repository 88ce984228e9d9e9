import Foundation
import Logging
import RecBot

/// While `join` runs: on a terminal, a small status block redrawn every second (senders,
/// bitrate, loss, bytes, elapsed); otherwise one structured log line a minute.
final class LiveStatus: @unchecked Sendable {
    private var task: Task<Void, Never>?
    private var previousBytes: [String: UInt64] = [:]
    private var drawnLines = 0

    func start(session: JoinSession, channel: String, logger: Logger) {
        let terminal = isatty(STDERR_FILENO) == 1
        task = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: terminal ? 1_000_000_000 : 60_000_000_000)
                if Task.isCancelled { break }
                let status = await session.snapshot()
                if terminal {
                    draw(status, channel: channel)
                } else {
                    logger.info("status", metadata: [
                        "phase": "\(status.phase)", "senders": "\(status.senders.count)",
                        "bytes": "\(status.senders.reduce(0) { $0 + $1.bytes })",
                        "lost": "\(status.senders.reduce(0) { $0 + $1.lost })",
                        "recovered": "\(status.senders.reduce(0) { $0 + $1.recovered })",
                        "keyframe_requests": "\(status.senders.reduce(0) { $0 + $1.keyframeRequests })",
                        "frames_dropped": "\(status.senders.reduce(0) { $0 + $1.framesDropped })",
                        "interruptions": "\(status.interruptions)",
                        "media_lost_s": "\(String(format: "%.1f", status.mediaLostSeconds))",
                    ])
                }
            }
        }
    }

    func stop() {
        task?.cancel()
        if drawnLines > 0 { StandardStreams.err("\n") }
    }

    private func draw(_ status: JoinStatus, channel: String) {
        let elapsed = Int(status.elapsedSeconds)
        var lines = [String(format: "recbot  %@  %02d:%02d:%02d  %@  %d sender(s)", channel, elapsed / 3600, elapsed / 60 % 60, elapsed % 60,
                            status.phase.description, status.senders.count)
            + (status.interruptions > 0 ? String(format: "  %d interruption(s), %.1f s lost", status.interruptions, status.mediaLostSeconds) : "")]
        for sender in status.senders {
            let rate = Double(sender.mediaBytes - min(sender.mediaBytes, previousBytes[sender.connectionID] ?? 0)) * 8 / 1000
            previousBytes[sender.connectionID] = sender.mediaBytes
            let lossPercent = sender.packets > 0 ? Double(sender.lost) * 100 / Double(sender.packets + sender.lost) : 0
            // Lost counts what stayed lost after NACK/RTX; recovered, what retransmission repaired.
            lines.append(String(format: "  %@  %-9@ %7.0f kbit/s  lost %d (%.1f%%)  recovered %d  PLI %d  jitter %.0f ms  %@", sender.connectionID,
                                sender.codecs, rate, sender.lost, lossPercent, sender.recovered, sender.keyframeRequests, sender.jitterMilliseconds,
                                HumanFormat.size(bytes: Int64(sender.bytes)) ?? "-"))
        }
        // Move up over the previous block, then redraw it line by line.
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)F" : ""
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        drawnLines = lines.count
        StandardStreams.err(text)
    }
}
