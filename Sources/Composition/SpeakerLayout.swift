import Foundation

/// The speaker layout: the sender speaking now fills the top three quarters of the canvas, the
/// others sit in one row of thumbnails below it (in the order they joined), each fitted, never
/// stretched. Alone, a sender fills the canvas.
public enum SpeakerLayout {
    /// The speaker's rectangle first, then one per other sender; even coordinates and sizes.
    public static func cells(count: Int, width: Int, height: Int) -> (speaker: Rectangle, others: [Rectangle])? {
        guard count > 0 else { return nil }
        guard count > 1 else { return (Rectangle(x: 0, y: 0, width: width, height: height), []) }
        let mainHeight = (height * 3 / 4) & ~1
        let stripHeight = (height - mainHeight) & ~1
        let others = count - 1
        // Thumbnails as wide as 16:9 at the strip's height, narrower when they would not fit in a row.
        let thumbnailWidth = min((stripHeight * 16 / 9) & ~1, (width / others) & ~1)
        let left = ((width - thumbnailWidth * others) / 2) & ~1
        let strip = (0..<others).map { Rectangle(x: left + $0 * thumbnailWidth, y: mainHeight, width: thumbnailWidth, height: stripHeight) }
        return (Rectangle(x: 0, y: 0, width: width, height: mainHeight), strip)
    }
}

/// Who is speaking, from each sender's decoded audio, 20 ms at a time. Sans-IO: levels in,
/// the speaker out. A level is smoothed (about 300 ms), a sender counts as speaking above
/// -50 dBFS, and the speaker changes only when another sender has been louder by 6 dB for a
/// whole second, so a cough or a laugh does not flip the picture; a speaker who leaves is
/// replaced at once by the loudest sender still there.
public struct SpeakerSelector: Sendable {
    public static let speakingThreshold = -50.0
    public static let margin = 6.0
    /// Slots (20 ms each) a challenger must lead by the margin: one second.
    public static let holdSlots = 50
    /// The smoothing's weight for a new slot (a time constant of about 300 ms at 20 ms slots).
    static let smoothing = 0.065

    private var levels: [String: Double] = [:]
    private var challenger: (id: String, slots: Int)?
    public private(set) var speaker: String?

    public init() {}

    /// One 20 ms slot: each present sender's level in dBFS (silence as -120). Returns the speaker.
    @discardableResult
    public mutating func update(levels slot: [(id: String, dBFS: Double)]) -> String? {
        let present = Set(slot.map(\.id))
        levels = levels.filter { present.contains($0.key) }
        for (id, level) in slot {
            let previous = levels[id] ?? level
            levels[id] = previous + (level - previous) * Self.smoothing
        }
        let loudest = slot.map(\.id).max { (levels[$0] ?? -120, $1) < (levels[$1] ?? -120, $0) }
        guard let current = speaker, present.contains(current) else {
            // No speaker yet, or the speaker left: the loudest one there (the first to join when all are silent).
            speaker = loudest.flatMap { (levels[$0] ?? -120) >= Self.speakingThreshold ? $0 : nil } ?? slot.first?.id
            challenger = nil
            return speaker
        }
        guard let loudest, loudest != current, let loud = levels[loudest], loud >= Self.speakingThreshold,
              loud >= (levels[current] ?? -120) + Self.margin else {
            challenger = nil
            return speaker
        }
        let slots = (challenger.map { $0.id == loudest ? $0.slots : 0 } ?? 0) + 1
        if slots >= Self.holdSlots {
            speaker = loudest
            challenger = nil
        } else {
            challenger = (loudest, slots)
        }
        return speaker
    }

    /// The level of interleaved 16-bit samples, in dBFS (RMS; -120 for silence).
    public static func level(_ samples: [Int16]) -> Double {
        guard !samples.isEmpty else { return -120 }
        var sum = 0.0
        for sample in samples { sum += Double(sample) * Double(sample) }
        let rms = (sum / Double(samples.count)).squareRoot() / 32_768
        return rms > 0 ? max(-120, 20 * log10(rms)) : -120
    }
}
