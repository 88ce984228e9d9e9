/// Each sender's part numbers, handed out in this one place: a split boundary, a codec change
/// and a sender's return (after a re-offer without it or a lost connection) all take the next
/// one, so no path can name a file that exists or a catalog row that is taken. Numbers only
/// grow, except that the newest one, when its part ends before any media (it has no file), is
/// handed out again: the parts on disk stay numbered without holes.
struct PartNumbers {
    /// The first number a sender gets: 0 is the whole-file archive (`archive-<id>.webm`), so
    /// split recording numbers its parts from 1.
    let first: Int
    private var newest: [String: Int] = [:]

    init(first: Int) { self.first = first }

    /// Numbers continue after `prior`'s (a session another process recorded before this one).
    init(first: Int, continuing prior: PriorParts) {
        self.first = first
        for (sender, part) in prior.newest {
            // Part 0 of a session without split is renamed part 1 once later parts exist (as
            // a rejoin does here), by `recbot repair` where its file is: 1 stays reserved for it.
            newest[sender] = first == 0 ? max(part, 1) : max(part, first - 1)
        }
    }

    /// Whether a number was handed out to `sender` and is in use (a part with media, or the
    /// current one).
    func hasNumbered(_ sender: String) -> Bool { newest[sender] != nil }

    mutating func take(_ sender: String) -> Int {
        let number = newest[sender].map { $0 + 1 } ?? first
        newest[sender] = number
        return number
    }

    /// `part` names a file of `sender` (a sender's only file renamed part 1 when another follows it).
    mutating func inUse(_ sender: String, part: Int) {
        newest[sender] = max(newest[sender] ?? part, part)
    }

    /// The part numbered `part` ended with no file: its number is free again if it is the newest.
    mutating func giveBack(_ sender: String, part: Int) {
        guard newest[sender] == part else { return }
        newest[sender] = part == first ? nil : part - 1
    }
}

/// What earlier processes recorded of a session this process continues (a failover), from the
/// catalog: per sender, the newest part number.
public struct PriorParts: Sendable, Equatable {
    public var newest: [String: Int] = [:]

    public init(newest: [String: Int] = [:]) { self.newest = newest }

    /// From the session's recording rows (any part, any status: a number in the catalog is taken).
    public init(parts: [(connectionID: String, part: Int)]) {
        for (sender, part) in parts { newest[sender] = max(newest[sender] ?? part, part) }
        hadWholeFile = Set(parts.filter { $0.part == 0 }.map(\.connectionID))
    }

    /// Senders that have a part 0: with a split beside it, that whole-file archive ended with
    /// the process that wrote it (its name is taken), so the split parts carry on alone.
    public var hadWholeFile: Set<String> = []
}
