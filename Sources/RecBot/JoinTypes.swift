import Archive
import DiskLayout
import Foundation
import Logging
import Media
import Outcomes
import PeerConnection
import Recorder
import SoraSignalingCore
import SystemClock
import Transport
import Webhooks
import WireCoding

/// A moment's view of a running session, for the live status.
public struct JoinStatus: Sendable {
    public struct Sender: Sendable {
        public var connectionID: String
        public var codecs: String
        /// Bytes written to (or queued for) the file.
        public var bytes: UInt64
        /// Encoded media bytes received, for the bitrate.
        public var mediaBytes: UInt64
        public var packets: Int
        /// Packets lost after recovery.
        public var lost: Int
        /// Packets repaired by retransmission.
        public var recovered: Int
        public var keyframeRequests: Int
        public var jitterMilliseconds: Double
        public var framesDropped: Int
    }

    public var elapsedSeconds: Double
    public var phase: SessionPhase
    public var senders: [Sender]
    /// Outages so far (a lost connection and the rejoin after it), and the media they cost.
    public var interruptions = 0
    public var mediaLostSeconds = 0.0
}

/// The session's running totals, for metrics: every counter only grows, senders that left included.
public struct SessionTotals: Sendable {
    public var phase: SessionPhase
    public var startedAtUnixSeconds: Double
    public var uptimeSeconds: Double
    /// ICE and DTLS states (`new`, `checking`, `connected`…), nil before the transport exists.
    public var iceState: String?
    public var dtlsState: String?
    public var sendersRecording = 0
    public var transport = TransportCounters()
    public var received = ReceiveCounters()
    public var receiver = MediaReceiverCounters()
    public var recording = RecordingTotals()
    /// Messages waiting in the signaling inbox; catalog writes waiting, and their bytes; media
    /// bytes waiting to be written by every recorder of the process.
    public var inboxDepth = 0
    public var catalogQueue = 0
    public var catalogQueueBytes = 0
    /// Catalog writes waiting in the local spool for an unreachable catalog, their bytes, and
    /// how many were spooled in all.
    public var catalogSpoolDepth = 0
    public var catalogSpoolBytes = 0
    public var catalogWritesSpooled = 0
    public var writeQueueBytes = 0
    public var catalogWritesDropped = 0
    /// Webhooks: delivered, attempts that failed (retried later), given up on, and rows queued.
    public var webhooks = WebhookTotals()
    public var signalingMessagesDropped = 0
    /// Outages (lost connections to Sora), those a rejoin ended, the time spent in them and
    /// the media they cost; whether one is being ridden out now.
    public var interruptions = 0
    public var rejoins = 0
    public var interruptedSeconds = 0.0
    public var mediaLostSeconds = 0.0
    public var rejoining = false

    public init(phase: SessionPhase, startedAtUnixSeconds: Double, uptimeSeconds: Double) {
        (self.phase, self.startedAtUnixSeconds, self.uptimeSeconds) = (phase, startedAtUnixSeconds, uptimeSeconds)
    }
}

public struct JoinOutcome: Sendable {
    public var cause: EndCause
    public var endReason: String
    public var sessionID: String?
    /// The exit status the cause gives.
    public var result: ExitStatus { ExitStatus(cause) }

    public init(cause: EndCause, endReason: String, sessionID: String?) {
        (self.cause, self.endReason, self.sessionID) = (cause, endReason, sessionID)
    }
}

/// Opens a catalog for a session; it fails with a `CatalogError`.
public typealias CatalogOpener = @Sendable (Logger) throws -> any CatalogStore

public struct JoinOptions: Sendable {
    /// Where the session's time comes from (tests give a simulated one).
    public var clock: any TimeSource = SystemTimeSource()
    /// Where the session's randomness comes from (injected like the clock).
    public var random: any RandomSource = SystemRandom()
    public var urls: [String]
    public var connect: ConnectOptions
    public var durationMilliseconds: Int64?
    /// `--stop-when-idle`: the session ends (as done) once no sender has been present this long.
    public var stopWhenIdleMilliseconds: Int64?
    /// `--wait-for-senders`: the session ends (exit 79, nothing recorded) when no sender came this
    /// long after the join.
    public var waitForSendersMilliseconds: Int64?
    public var insecure = false
    /// Recordings, and the catalog unless `catalog` names another.
    public var dataDirectory: DataDirectory
    /// Opens (creating and migrating) the session's catalog. The command line chooses which
    /// (an SQLite file, or a shared PostgreSQL through ArchivePostgres); nil is catalog.sqlite in
    /// the data directory. The session itself knows no catalog kind.
    public var openCatalog: CatalogOpener?
    public var connectTimeoutSeconds: Double = 30
    public var hostPolicy = HostAddressPolicy()
    /// TURN: ICE servers and transport policy overrides, and the CA for `turns:`.
    public var relay = RelaySettings()
    /// How lost packets are recovered (NACK/RTX) and how long a gap is waited for.
    public var recovery = RecoveryPolicy()
    /// When video is shed past capacity, and how it comes back (docs/performance.md).
    public var overload = OverloadPolicy()
    /// What one session may store in the events table; beyond it events are counted, not stored.
    public var eventLimits = EventLimits()
    public var recbotVersion: String
    /// The name the data directory's recordings are cataloged under: the machine's host name,
    /// or a name that outlives it (a Kubernetes pod's volume), so `verify --pending` and
    /// `upload` on the same disk find them.
    public var host = ProcessInfo.processInfo.hostName

    /// Joining again after a connection failure a rejoin may cure: attempts per outage
    /// (nil: until the window ends; 0: never) and the backoff.
    public var rejoin = RejoinSchedule.Settings()
    /// Exit non-zero (69) when the session had any interruption, even one a rejoin ended.
    public var failOnInterruption = false

    /// Webhooks with Sora's event names (`--webhook-url`); nil: none.
    public var webhooks: WebhookSettings?
    /// Time-split recording (`--split-duration`, `--split-only`); nil: one file per sender.
    public var split: SplitPolicy?
    /// `--recording-metadata`: JSON text, returned as `recording_metadata` in the report,
    /// the sidecars and the split end markers.
    public var recordingMetadata: String?

    /// How long finishing the files may take at the end; past it recbot exits with 74 and
    /// leaves the rest to `recbot repair` (a hung disk must not hang a cron job for ever).
    public var finalizeTimeoutSeconds: Double = 60

    /// `--capture-rtp`: every decrypted RTP/RTCP packet to this pcap file, the offers beside it
    /// (a debugging aid; see `PacketCapture`). nil: no capture.
    public var capturePath: String?

    /// The session's id, when its caller chose it (`recbot serve` gives each job's recording
    /// the job's id); nil: a new ULID. A session the catalog already has is refused, unless
    /// `continuation` says to go on with it.
    public var sessionID: String?

    /// `--retention`: how long the session is kept; `recbot prune --expired` may remove its
    /// files after that (nil: until an operator prunes it).
    public var retentionMilliseconds: Int64?

    /// `--continue-session`: go on recording `sessionID`, which another process recorded and
    /// no longer does (its worker died): a new segment of the same session, whose parts
    /// continue the numbering and whose gap is an interruption with cause `failover`.
    public var continuation: SessionContinuation?

    public init(urls: [String], connect: ConnectOptions, dataDirectory: DataDirectory, recbotVersion: String) {
        self.urls = urls
        self.connect = connect
        self.dataDirectory = dataDirectory
        self.recbotVersion = recbotVersion
    }
}

/// A per-session cap on stored events (notify, push, data-channel messages): a hostile or
/// runaway channel cannot fill the disk through the catalog.
public struct EventLimits: Sendable, Equatable {
    public var maximumCount: Int
    public var maximumBytes: Int

    public init(maximumCount: Int = 1_000_000, maximumBytes: Int = 1 << 30) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }
}

/// What the session's webhook dispatcher did, for the metrics.
public struct WebhookTotals: Sendable, Equatable {
    public var delivered = 0
    public var failedAttempts = 0
    public var givenUp = 0
    /// Rows waiting in the outbox (any session's: the dispatcher sends them all).
    public var queued = 0
    public init() {}
}
extension SidecarContext {
    /// A session's context as its options describe it (split and metadata included).
    init(session: String, options: JoinOptions, soraSessionID: String?, botConnectionID: String?) {
        self.init(recordingID: session, channelID: options.connect.channelID, soraSessionID: soraSessionID,
                  botConnectionID: botConnectionID, recbotVersion: options.recbotVersion)
        splitDurationSeconds = options.split?.seconds
        splitOnly = options.split?.only
        recordingMetadata = options.recordingMetadata
    }
}

/// How a join continues a session another process recorded (`JoinOptions.continuation`).
public struct SessionContinuation: Sendable, Equatable {
    /// `--job-fence`: the fencing token under which `recbot serve` claimed the session's job;
    /// the catalog refuses the continuation once another worker holds a newer one. Nil for an
    /// operator's continuation, which is refused while the session is still open.
    public var jobFence: Int64?

    public init(jobFence: Int64?) { self.jobFence = jobFence }
}
