import Archive

/// A session drawn on one time axis: a row per sender with its presence and its files, the
/// session's outages across every row, and its messages as ticks. Pure geometry, so the
/// drawing is tested without a browser.
public struct SessionTimeline: Sendable, Equatable {
    public struct Span: Sendable, Equatable {
        public var start: Int64
        public var end: Int64
    }

    public struct Part: Sendable, Equatable {
        public var recordingID: Int64?
        public var span: Span
        public var part: Int
        public var status: RecordingStatus
        public var codecs: String
    }

    public struct Row: Sendable, Equatable {
        public var connectionID: String
        public var presence: Span?
        public var parts: [Part]
        /// Arrival times of this sender's messages.
        public var ticks: [Int64]
    }

    public var span: Span
    public var rows: [Row]
    public var interruptions: [Span]
    /// Messages with no sender (notify, push): drawn on the session's own row.
    public var sessionTicks: [Int64]

    /// `end`: the session's end, or now while it records.
    public init(session: SessionRecord, connections: [ConnectionRecord], recordings: [RecordingRecord], interruptions: [InterruptionRecord],
                eventTimes: [(sender: String?, at: Int64)], now: Int64) {
        let end = max(session.endedAt ?? now, session.startedAt + 1)
        span = Span(start: session.startedAt, end: end)
        let clamp = { (value: Int64) in min(max(value, session.startedAt), end) }
        var order: [String] = []
        for connection in connections where !order.contains(connection.connectionID) { order.append(connection.connectionID) }
        for recording in recordings where !order.contains(recording.connectionID) { order.append(recording.connectionID) }
        let presence = Dictionary(connections.map { ($0.connectionID, $0) }, uniquingKeysWith: { first, _ in first })
        var ticksBySender: [String: [Int64]] = [:]
        var sessionTicks: [Int64] = []
        for event in eventTimes {
            if let sender = event.sender, presence[sender] != nil || recordings.contains(where: { $0.connectionID == sender }) {
                ticksBySender[sender, default: []].append(clamp(event.at))
            } else {
                sessionTicks.append(clamp(event.at))
            }
        }
        rows = order.map { id in
            let connection = presence[id]
            let parts = recordings.filter { $0.connectionID == id }.sorted { ($0.startedAt, $0.part) < ($1.startedAt, $1.part) }.map { recording in
                let stop = recording.endedAt ?? recording.durationMs.map { recording.startedAt + $0 } ?? end
                return Part(recordingID: recording.id, span: Span(start: clamp(recording.startedAt), end: clamp(stop)), part: recording.part,
                            status: recording.status, codecs: [recording.videoCodec, recording.audioCodec].compactMap { $0 }.joined(separator: "+"))
            }
            return Row(connectionID: id, presence: connection.map { Span(start: clamp($0.firstSeenAt), end: clamp($0.leftAt ?? end)) },
                       parts: parts, ticks: ticksBySender[id] ?? [])
        }
        self.interruptions = interruptions.map { Span(start: clamp($0.startedAt), end: clamp($0.endedAt ?? end)) }
        self.sessionTicks = sessionTicks
    }

    /// Where `time` falls on an axis `width` wide.
    public func x(_ time: Int64, width: Double) -> Double {
        let length = Double(span.end - span.start)
        return (Double(time - span.start) / length * width * 10).rounded() / 10
    }
}
