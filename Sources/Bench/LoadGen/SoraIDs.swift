import WireCoding

/// Connection ids in Sora's shape: 26 characters of Crockford base32.
enum SoraIDs {
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// A publisher's id starts with its index, so files sort in join order and a person can tell them apart.
    static func publisher(_ index: Int, using random: inout SplitMix64) -> String {
        let prefix = "P" + String(String(index).suffix(6)).leftPadded(to: 6)
        return prefix + randomCharacters(26 - prefix.count, using: &random)
    }

    static func random(using random: inout SplitMix64) -> String { randomCharacters(26, using: &random) }

    private static func randomCharacters(_ count: Int, using random: inout SplitMix64) -> String {
        String((0..<count).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] })
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
