/// A substring search across sessions' messages (`recbot search`).
public struct MessageSearch: Sendable {
    /// Kinds searched when none is asked for: what people and apps said, not signaling.
    public static let defaultKinds: [EventKind] = [.datachannel, .notify, .push]
    public static let defaultLimit = 50

    /// Found anywhere in a message's text, case-folded (ASCII case only below three characters).
    public var text: String
    public var channelID: String?
    public var sessionID: String?
    /// Received at or after (Unix ms).
    public var since: Int64?
    /// Received before (Unix ms).
    public var until: Int64?
    public var kinds: [EventKind]
    public var limit: Int

    public init(text: String, channelID: String? = nil, sessionID: String? = nil, since: Int64? = nil, until: Int64? = nil,
                kinds: [EventKind] = MessageSearch.defaultKinds, limit: Int = MessageSearch.defaultLimit) {
        self.text = text
        self.channelID = channelID
        self.sessionID = sessionID
        self.since = since
        self.until = until
        self.kinds = kinds.isEmpty ? Self.defaultKinds : kinds
        self.limit = max(1, limit)
    }

    /// Both indexes (FTS5 trigram, pg_trgm) need three characters to use their trigrams;
    /// a shorter query is answered by a scan.
    public var usesTrigrams: Bool { text.unicodeScalars.count >= 3 }

    /// `%text%` for LIKE/ILIKE with `\` as the escape, so `%` and `_` in the query match themselves.
    public var likePattern: String {
        var pattern = "%"
        for character in text {
            if character == "%" || character == "_" || character == "\\" { pattern.append("\\") }
            pattern.append(character)
        }
        return pattern + "%"
    }
}

/// A message that matched, with its session's channel.
public struct MessageMatch: Sendable, Equatable {
    public var event: EventRecord
    public var channelID: String

    public init(event: EventRecord, channelID: String) { (self.event, self.channelID) = (event, channelID) }

    /// The text the search looked in.
    public var searchedText: String? {
        switch event.payload {
        case .text(let text): SearchText.of(event.payload) ?? text
        case .json(let text): SearchText.of(event.payload) ?? text
        case .binary: SearchText.of(event.payload)
        }
    }
}

/// A catalog that answers `recbot search`: newest first, at most `limit`.
public protocol MessageSearchStore {
    func searchMessages(_ search: MessageSearch) throws(CatalogError) -> [MessageMatch]
    /// Why the index cannot serve some queries on this catalog (for a warning), or nil.
    func searchIndexCaveat() throws(CatalogError) -> String?
}

extension MessageSearchStore {
    public func searchIndexCaveat() throws(CatalogError) -> String? { nil }
}
