import Foundation

/// What the generator sent, written at the end for the benchmark to check recordings against.
public struct GroundTruth: Codable, Sendable {
    public struct Publisher: Codable, Sendable {
        public var connectionID: String
        public var joinedAtUnixMilliseconds: Int64?
        public var leftAtUnixMilliseconds: Int64?
        /// It went silent with no BYE, re-offer or notify (`--vanish-interval`).
        public var vanished: Bool
        public var sent: PublisherCounts
    }

    public struct Lag: Codable, Sendable {
        public var frames: Int
        public var p50Milliseconds: Int
        public var p99Milliseconds: Int
        public var maxMilliseconds: Int
    }

    public var channelID: String
    public var botConnectionID: String
    public var end: String
    public var publishers: [Publisher]
    public var feedback: FeedbackCounts
    public var reOffersSent: Int
    public var reAnswersReceived: Int
    /// How late frames went out against their schedule.
    public var sendLag: Lag

    public init<Address>(_ generator: LoadGenerator<Address>) {
        channelID = generator.channelID
        botConnectionID = generator.botConnectionID
        if case .ended(let reason) = generator.phase { end = reason } else { end = "\(generator.phase)" }
        publishers = generator.publishers.map {
            Publisher(connectionID: $0.connectionID, joinedAtUnixMilliseconds: generator.joinedAtUnixMilliseconds[$0.connectionID],
                      leftAtUnixMilliseconds: generator.leftAtUnixMilliseconds[$0.connectionID],
                      vanished: generator.vanished.contains($0.connectionID), sent: $0.counts)
        }
        feedback = generator.peer.counts
        reOffersSent = generator.reOffersSent
        reAnswersReceived = generator.reAnswersReceived
        var histogram = [Int](repeating: 0, count: 101)
        for publisher in generator.publishers {
            for (bucket, count) in publisher.lagHistogram.enumerated() { histogram[bucket] += count }
        }
        sendLag = Self.lag(histogram)
    }

    static func lag(_ histogram: [Int]) -> Lag {
        let total = histogram.reduce(0, +)
        func percentile(_ fraction: Double) -> Int {
            let target = Int((Double(total) * fraction).rounded(.up))
            var seen = 0
            for (bucket, count) in histogram.enumerated() {
                seen += count
                if seen >= max(1, target) { return bucket }
            }
            return 0
        }
        return Lag(frames: total, p50Milliseconds: percentile(0.5), p99Milliseconds: percentile(0.99),
                   maxMilliseconds: histogram.lastIndex { $0 > 0 } ?? 0)
    }

    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
