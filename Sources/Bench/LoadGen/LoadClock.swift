import Foundation
import WireCoding

/// The generator's clocks: CLOCK_MONOTONIC for schedules, the wall clock for NTP and the ground truth.
public enum LoadClock {
    public static func now() -> MonotonicTime {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return MonotonicTime(nanoseconds: Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec))
    }

    /// NTP time (RFC 3550 §4) of a monotonic instant, through the wall clock now.
    public static func ntp(at instant: MonotonicTime) -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let wall = Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec) + (instant.nanoseconds - now().nanoseconds)
        let seconds = UInt64(wall / 1_000_000_000) &+ 2_208_988_800
        return seconds << 32 | (UInt64(wall % 1_000_000_000) << 32) / 1_000_000_000
    }

    /// Unix milliseconds of a monotonic instant (now when nil).
    static func unixMilliseconds(at instant: MonotonicTime? = nil) -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let wall = Int64(spec.tv_sec) * 1_000 + Int64(spec.tv_nsec) / 1_000_000
        guard let instant else { return wall }
        return wall + (instant.nanoseconds - now().nanoseconds) / 1_000_000
    }
}
