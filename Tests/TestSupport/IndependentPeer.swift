import Foundation

/// The test peers (the Sora test server and its encoders, Chromium and Janus, the load
/// generator, coturn) stand for other machines: a camera does not slow down because the
/// recorder's host is busy. On two cores the suite's own work starved them instead (the
/// four-codec server sent its audio at half speed while the unit tests ran, and its truth was no
/// longer a sender's), so they run at a higher priority than the suite and recbot, which still
/// compete with each other as before.
public enum IndependentPeer {
    /// Nice value for the peers (the suite and recbot stay at 0).
    public static let niceness: Int32 = -10

    /// Starts `process` and raises its priority at once: before it starts any thread or child
    /// (Linux keeps a nice value per thread, and new ones inherit it). Without the privilege to
    /// raise it (not root), the peer runs as before.
    public static func run(_ process: Process) throws {
        try process.run()
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(process.processIdentifier), niceness)
    }
}
