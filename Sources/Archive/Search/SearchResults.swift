/// Matches with where to play each, reading each (session, sender)'s recordings once.
public enum SearchResults {
    public struct Result: Sendable {
        public var match: MessageMatch
        public var placement: MessagePlacement?
    }

    public static func find(_ search: MessageSearch, in catalog: any CatalogStore) throws(CatalogError) -> [Result] {
        let matches = try catalog.searchMessages(search)
        var recordings: [String: [RecordingRecord]] = [:]
        var results: [Result] = []
        for match in matches {
            var placement: MessagePlacement?
            if let sender = match.event.senderConnectionID {
                let key = match.event.sessionID + "/" + sender
                if recordings[key] == nil {
                    recordings[key] = try catalog.recordings(RecordingFilter(sessionID: match.event.sessionID, connectionID: sender))
                }
                placement = MessagePlacement.locate(match.event, in: recordings[key] ?? [])
            }
            results.append(Result(match: match, placement: placement))
        }
        return results
    }
}
