import Archive
import Foundation

/// Chat-like messages from a fixed vocabulary and a seeded generator, so every run stores the
/// same catalog: common words in many messages, one phrase in a few.
struct MessageCorpus {
    let messages: Int
    let perSession: Int

    static let words = [
        "了解です", "お疲れさまです", "会議", "資料", "確認します", "ありがとうございます", "明日", "来週", "予定", "共有",
        "画面", "音声", "聞こえますか", "はい", "いいえ", "少々お待ちください", "発表", "質問", "回答", "次の議題",
        "meeting", "slides", "please", "check", "the", "agenda", "thanks", "sounds", "good", "later", "deadline", "review",
    ]
    /// Found in one message in 50,000.
    static let rarePhrase = "契約書の最終版"
    static let channels = 10

    struct Query {
        var label: String
        var text: String
        var channel: String?
    }

    static let queries = [
        Query(label: "rare, Japanese", text: "契約書"),
        Query(label: "rare, ASCII", text: "NDA-7731"),
        Query(label: "common, 3+ chars", text: "meeting"),
        Query(label: "common, 2 chars", text: "会議"),
        Query(label: "absent", text: "存在しない語句"),
        Query(label: "rare, 1 channel", text: "契約書", channel: "channel-5"),
        Query(label: "common, 1 channel", text: "meeting", channel: "channel-3"),
    ]

    func store(in catalog: any CatalogStore) throws {
        var random = SplitMix(seed: 44)
        let sessions = max(1, messages / perSession)
        let start: Int64 = 1_760_000_000_000
        var stored = 0
        for index in 0..<sessions {
            let id = ULID(milliseconds: UInt64(start) + UInt64(index) * 3_600_000, randomBytes: (0..<10).map { _ in UInt8(truncatingIfNeeded: random.next()) }).string
            let sessionStart = start + Int64(index) * 3_600_000
            try catalog.insertSession(SessionRecord(id: id, channelID: "channel-\(index % Self.channels)", startedAt: sessionStart))
            var batch: [EventRecord] = []
            let count = index == sessions - 1 ? messages - stored : min(perSession, messages - stored)
            for n in 0..<count {
                batch.append(EventRecord(sessionID: id, kind: .datachannel, label: "#chat", senderConnectionID: "C\(n % 4)",
                                         receivedAt: sessionStart + Int64(n) * 1_000, payload: payload(stored + n, &random)))
            }
            try catalog.insertEvents(batch)
            stored += count
        }
    }

    private func payload(_ n: Int, _ random: inout SplitMix) -> EventPayload {
        var text = (0..<(5 + Int(random.next() % 10))).map { _ in Self.words[Int(random.next() % UInt64(Self.words.count))] }.joined(separator: " ")
        if n % 50_000 == 25_000 { text += " " + Self.rarePhrase + " NDA-7731" }
        // Chat clients send text as bytes on Sora's messaging channels: half are binary here.
        return n % 2 == 0 ? .text(text) : .binary(Array(text.utf8))
    }
}

/// A small seeded generator (SplitMix64), so the corpus is the same every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
