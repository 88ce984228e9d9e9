import Foundation
import NIOCore
import NIOPosix
import WireCoding

/// The wait before the next join attempt. When the last attempt found nothing answering (the
/// network dark, the server restarting), a cheap TCP connect to each signaling address every
/// second ends the wait as soon as one answers: the backoff protects Sora from repeated joins,
/// and need not also delay the first join after the network comes back by up to 30 s.
enum RejoinWait {
    static let probeIntervalNanoseconds: UInt64 = 1_000_000_000

    /// True when it is time to join again; false when a stop came first.
    static func wait(until deadline: MonotonicTime, probing urls: [String], stopRequest: StopRequest, loop: EventLoop) async -> Bool {
        let targets = urls.compactMap(ProbeTarget.init(url:))
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let first = FirstOutcome()
            let tasks = TaskSet()
            // Whichever ends the wait, the others stop.
            let finish: @Sendable (Bool) -> Void = { value in
                guard first.claim() else { return }
                continuation.resume(returning: value)
                tasks.cancelAll()
            }
            tasks.add(Task {
                let delay = max(0, deadline.nanoseconds - JoinSession.monotonicNow().nanoseconds)
                try? await Task.sleep(nanoseconds: UInt64(delay))
                if !Task.isCancelled { finish(true) }
            })
            tasks.add(Task {
                if await stopRequest.wait() != nil { finish(false) }
            })
            guard !targets.isEmpty else { return }
            tasks.add(Task {
                while !Task.isCancelled {
                    try? await Task.sleep(nanoseconds: probeIntervalNanoseconds)
                    if Task.isCancelled { return }
                    for target in targets where await target.answers(on: loop) {
                        finish(true)
                        return
                    }
                }
            })
        }
    }
}

/// A signaling server's host and port, for a reachability probe.
struct ProbeTarget: Sendable {
    var host: String
    var port: Int

    init?(url: String) {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else { return nil }
        let secure = components.scheme?.lowercased() == "wss"
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (secure ? 443 : 80)
    }

    /// A TCP connection opens within a second (it is closed at once, before any byte).
    func answers(on loop: EventLoop) async -> Bool {
        do {
            let channel = try await ClientBootstrap(group: loop).connectTimeout(.seconds(1)).connect(host: host, port: port).get()
            try? await channel.close()
            return true
        } catch {
            return false
        }
    }
}
