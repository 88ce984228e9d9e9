import CoreMetrics
import Foundation
import Media
import Outcomes
import RecBot

/// One `recbot join`'s metrics, declared through swift-metrics with the factory it is given
/// (never the process-wide bootstrap, so tests and sessions stay independent).
///
/// The values are not counted on the hot path: the session keeps its own totals in its
/// sans-IO cores, and `update` samples them (about once a second) and advances the counters
/// by what grew since the last sample. Every metric carries the channel as its one constant
/// label; nothing is labelled per sender, so a channel's series stay few whatever its size.
public final class SessionMetrics: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`; swift-metrics handlers are thread-safe.
    private let lock = NSLock()
    private let factory: MetricsFactory
    private let channel: String
    private var counters: [String: SampledCounter<Int>] = [:]
    private var secondsCounters: [String: SampledCounter<Double>] = [:]
    private var gauges: [String: Gauge] = [:]

    static let iceStates = ["new", "checking", "connected", "failed", "closed"]
    static let dtlsStates = ["idle", "handshaking", "connected", "closed", "failed"]

    public init(factory: MetricsFactory, channel: String) {
        self.factory = factory
        self.channel = channel
    }

    /// Advances every metric to the session's current totals.
    public func update(_ totals: SessionTotals) {
        lock.withLock {
            let received = totals.received
            count("recbot_udp_datagrams_received_total", to: totals.transport.datagramsReceived)
            count("recbot_rtp_packets_received_total", to: totals.transport.rtpPackets)
            count("recbot_rtcp_packets_received_total", to: totals.transport.rtcpPackets)
            count("recbot_receive_backlog_dropped_total", ("class", "media"), to: totals.transport.backlog.mediaDropped)
            count("recbot_receive_backlog_dropped_total", ("class", "control"), to: totals.transport.backlog.controlDropped)
            count("recbot_udp_kernel_drops_total", to: totals.transport.kernelReceiveDrops)
            // Only video is shed by choice (audio and control never are): see docs/performance.md.
            count("recbot_shed_frames_total", ("kind", "video"), to: totals.transport.shedVideoFrames + totals.transport.backlog.videoFramesShed)
            // What the kernel's socket filter dropped of paused video never reaches recbot as
            // pictures; it is counted in datagrams (docs/performance.md, "Shedding").
            count("recbot_shed_kernel_datagrams_total", to: totals.transport.kernelFilteredDatagrams)
            count("recbot_overload_episodes_total", to: totals.transport.overloadEpisodes)
            count("recbot_rtp_packets_lost_total", to: received.lost)
            count("recbot_rtp_packets_recovered_total", to: received.recovered)
            count("recbot_rtp_packets_unrouted_total", to: totals.receiver.unrouted)
            count("recbot_nack_packets_requested_total", to: received.nackedSequenceNumbers)
            count("recbot_keyframe_requests_sent_total", ("type", "pli"), to: received.pictureLossIndications)
            count("recbot_keyframe_requests_sent_total", ("type", "fir"), to: received.fullIntraRequests)
            let sync = totals.receiver.sync
            count("recbot_sender_reports_total", ("result", "used"),
                  to: sync.senderReports - sync.implausibleSenderReports - sync.outlierSenderReports)
            count("recbot_sender_reports_total", ("result", "implausible"), to: sync.implausibleSenderReports)
            count("recbot_sender_reports_total", ("result", "outlier"), to: sync.outlierSenderReports)
            count("recbot_timeline_events_total", ("event", "slew"), to: sync.slewCorrections)
            count("recbot_timeline_events_total", ("event", "discontinuity"), to: sync.timestampDiscontinuities)
            count("recbot_timeline_events_total", ("event", "arrival_start"), to: sync.arrivalStarts)
            count("recbot_timeline_events_total", ("event", "delay_floor_step"), to: sync.delayFloorSteps)
            count("recbot_feedback_deferred_total", ("type", "nack"), to: totals.receiver.feedback.nacksDeferred)
            count("recbot_feedback_deferred_total", ("type", "keyframe_request"), to: totals.receiver.feedback.keyframeRequestsDeferred)
            count("recbot_frames_dropped_total", ("reason", "incomplete"), to: received.framesDropped.incomplete)
            count("recbot_frames_dropped_total", ("reason", "waiting_for_keyframe"), to: received.framesDropped.waitingForKeyframe)
            count("recbot_frames_dropped_total", ("reason", "malformed"), to: received.framesDropped.malformed)
            count("recbot_frames_dropped_total", ("reason", "oversized"), to: received.framesDropped.oversized)
            count("recbot_frames_dropped_total", ("reason", "recorder"), to: totals.recording.framesDropped)
            count("recbot_frames_recorded_total", ("kind", "video"), to: totals.recording.videoFrames)
            count("recbot_frames_recorded_total", ("kind", "audio"), to: totals.recording.audioFrames)
            count("recbot_bytes_written_total", to: Int(clamping: totals.recording.bytes))
            count("recbot_media_bytes_received_total", to: Int(clamping: totals.recording.mediaBytes))
            count("recbot_recordings_started_total", to: totals.recording.recordersStarted)
            count("recbot_catalog_writes_dropped_total", to: totals.catalogWritesDropped)
            count("recbot_catalog_writes_spooled_total", to: totals.catalogWritesSpooled)
            count("recbot_signaling_messages_dropped_total", to: totals.signalingMessagesDropped)
            count("recbot_webhooks_delivered_total", to: totals.webhooks.delivered)
            count("recbot_webhooks_failed_total", ("outcome", "retried"), to: totals.webhooks.failedAttempts)
            count("recbot_webhooks_failed_total", ("outcome", "given_up"), to: totals.webhooks.givenUp)
            count("recbot_interruptions_total", to: totals.interruptions)
            count("recbot_rejoins_total", to: totals.rejoins)
            count("recbot_interrupted_seconds_total", seconds: totals.interruptedSeconds)
            count("recbot_media_lost_seconds_total", seconds: totals.mediaLostSeconds)
            set("recbot_rejoining", to: totals.rejoining ? 1 : 0)

            set("recbot_senders_recording", to: Double(totals.sendersRecording))
            set("recbot_session_start_time_seconds", to: totals.startedAtUnixSeconds)
            set("recbot_session_uptime_seconds", to: totals.uptimeSeconds)
            set("recbot_queue_depth", ("queue", "signaling_inbox"), to: Double(totals.inboxDepth))
            set("recbot_queue_depth", ("queue", "catalog_writes"), to: Double(totals.catalogQueue))
            set("recbot_queue_bytes", ("queue", "catalog_writes"), to: Double(totals.catalogQueueBytes))
            set("recbot_queue_depth", ("queue", "catalog_spool"), to: Double(totals.catalogSpoolDepth))
            set("recbot_queue_bytes", ("queue", "catalog_spool"), to: Double(totals.catalogSpoolBytes))
            set("recbot_queue_bytes", ("queue", "media_writes"), to: Double(totals.writeQueueBytes))
            set("recbot_queue_depth", ("queue", "webhooks"), to: Double(totals.webhooks.queued))
            set("recbot_queue_bytes", ("queue", "receive_backlog"), to: Double(totals.transport.backlog.waitingBytes))
            set("recbot_paused_video_streams", to: Double(totals.transport.pausedVideoStreams))
            oneHot("recbot_ice_state", label: "state", states: Self.iceStates, current: totals.iceState)
            oneHot("recbot_dtls_state", label: "state", states: Self.dtlsStates, current: totals.dtlsState)
            set("recbot_session_ended", to: 0)
        }
    }

    /// The session ended: its end reason (the exit status's name) and exit code.
    public func ended(_ outcome: JoinOutcome) {
        lock.withLock {
            set("recbot_session_ended", to: 1)
            set("recbot_session_exit_code", to: Double(outcome.result.rawValue))
            oneHot("recbot_session_end_reason", label: "reason", states: ExitStatus.allCases.map(\.metricName), current: outcome.result.metricName)
        }
    }

    // MARK: - Internals

    private func count(_ name: String, _ label: (String, String)? = nil, to total: Int) {
        let key = label.map { "\(name){\($0.0)=\($0.1)}" } ?? name
        if counters[key] == nil {
            counters[key] = SampledCounter(Counter(label: name, dimensions: dimensions(label), factory: factory))
        }
        counters[key]?.advance(to: total)
    }

    private func count(_ name: String, seconds total: Double) {
        if secondsCounters[name] == nil {
            secondsCounters[name] = SampledCounter(FloatingPointCounter(label: name, dimensions: dimensions(nil), factory: factory))
        }
        secondsCounters[name]?.advance(to: total)
    }

    private func set(_ name: String, _ label: (String, String)? = nil, to value: Double) {
        let key = label.map { "\(name){\($0.0)=\($0.1)}" } ?? name
        if gauges[key] == nil { gauges[key] = Gauge(label: name, dimensions: dimensions(label), factory: factory) }
        gauges[key]?.record(value)
    }

    /// One series per state, 1 for the current one and 0 for the others (so a state change
    /// never leaves a stale 1 behind).
    private func oneHot(_ name: String, label: String, states: [String], current: String?) {
        for state in states { set(name, (label, state), to: state == current ? 1 : 0) }
    }

    private func dimensions(_ label: (String, String)?) -> [(String, String)] {
        [("channel", channel)] + (label.map { [$0] } ?? [])
    }
}

/// A swift-metrics counter fed from a total kept elsewhere: it advances by what the total
/// grew (a count, or seconds).
struct SampledCounter<Total: Numeric & Comparable> {
    private let increment: (Total) -> Void
    private(set) var last: Total = 0

    init(_ counter: Counter) where Total == Int { increment = { counter.increment(by: Int64($0)) } }
    init(_ counter: FloatingPointCounter) where Total == Double { increment = { counter.increment(by: $0) } }

    mutating func advance(to total: Total) {
        guard total > last else { return }
        increment(total - last)
        last = total
    }
}

extension ExitStatus {
    /// The end reason as a metric label: the exit status's name (`success`, `network`…).
    var metricName: String {
        switch self {
        case .success: "success"
        case .failure: "failure"
        case .usage: "usage"
        case .dataError: "data_error"
        case .notFound: "not_found"
        case .network: "network"
        case .storage: "storage"
        case .protocolError: "protocol_error"
        case .rejected: "rejected"
        case .configuration: "configuration"
        case .noSenders: "no_senders"
        case .relayUnavailable: "relay_unavailable"
        case .relayCredentials: "relay_credentials"
        case .catalogUnavailable: "catalog_unavailable"
        case .catalogCredentials: "catalog_credentials"
        case .uploadFailed: "upload_failed"
        case .uploadCredentials: "upload_credentials"
        case .interruptedAtOnce: "interrupted_at_once"
        case .outputClosed: "output_closed"
        case .terminatedAtOnce: "terminated_at_once"
        }
    }
}
