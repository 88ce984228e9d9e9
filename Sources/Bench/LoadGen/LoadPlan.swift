/// What the load generator is asked to do.
public struct LoadPlan: Sendable {
    public var publishers = 8
    /// Seconds from the recorder's answer until the generator closes the session (nil: until stopped).
    public var durationSeconds: Double?
    /// When the duration is reached, media stops and NACKs are still answered for this long before
    /// the session closes, as they are for a publisher that leaves mid-run: a packet lost just
    /// before the end is then as repairable as any other, and the ground truth stays exact.
    public var drainSeconds = 1.0
    /// Publishers join spread evenly over this many seconds (0: all at once).
    public var rampSeconds = 1.0
    /// Every this many seconds one publisher leaves (a re-offer makes its sections inactive and a
    /// `connection.destroyed` notify follows) and a new one joins.
    public var churnIntervalSeconds: Double?
    /// Every this many seconds one publisher stops sending with no re-offer and no notify.
    public var vanishIntervalSeconds: Double?
    /// First transmissions dropped on purpose (RTX is never dropped), seeded.
    public var lossPercent = 0.0
    /// First transmissions held back behind the next packet, and sent twice (seeded).
    public var reorderPercent = 0.0
    public var duplicatePercent = 0.0
    /// Bursty loss on each publisher's path (Gilbert–Elliott; RTX too): this average share, in
    /// bursts of about `burstLength` packets.
    public var burstLossPercent = 0.0
    public var burstLength = 4.0
    /// Each packet of a publisher (RTX too) waits a random 0..<this before it leaves (seeded).
    public var jitterMilliseconds = 0.0
    /// Publishers offer video but send only audio (audio's own cost, as while video is paused).
    public var audioOnly = false
    /// Every this many seconds the next publisher (in turn) sends at ten times its rate for
    /// `burstSeconds`, then is silent until its schedule is due again.
    public var burstIntervalSeconds: Double?
    public var burstSeconds = 0.5
    public var seed: UInt64 = 1
    public var pingIntervalSeconds = 5.0
    public var channelID: String?

    public init() {}
}
