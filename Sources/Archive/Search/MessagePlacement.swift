/// Where to play a message: the recording of its sender that was being written when it
/// arrived, and the offset into that file. A file's timeline starts at its `started_at`
/// (the captions use the same clock), so the offset is the arrival less that.
public struct MessagePlacement: Sendable, Equatable {
    public var recording: RecordingRecord
    public var offsetMilliseconds: Int64

    /// `recordings` are the sender's in the message's session; nil when the message has no
    /// sender or arrived while none of its files was being written.
    public static func locate(_ event: EventRecord, in recordings: [RecordingRecord]) -> MessagePlacement? {
        guard let sender = event.senderConnectionID else { return nil }
        let covering = recordings.filter { recording in
            guard recording.sessionID == event.sessionID, recording.connectionID == sender,
                  let offset = CatalogTime.span(from: recording.startedAt, to: event.receivedAt), offset >= 0 else { return false }
            guard let length = recording.durationMs ?? recording.endedAt.flatMap({ CatalogTime.span(from: recording.startedAt, to: $0) })
            else { return true }  // still being written
            return offset <= length
        }
        // The latest-starting file that covers it: after a rejoin, the part recorded then.
        guard let recording = covering.max(by: { ($0.startedAt, $0.part) < ($1.startedAt, $1.part) }),
              let offset = CatalogTime.span(from: recording.startedAt, to: event.receivedAt) else { return nil }
        return MessagePlacement(recording: recording, offsetMilliseconds: offset)
    }
}
