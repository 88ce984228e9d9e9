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
