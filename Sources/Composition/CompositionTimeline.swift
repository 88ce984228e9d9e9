/// Which spans of the session a composition shows, in order, back to back: the whole excerpt,
/// or — with a hisui layout's `trim` — the excerpt less the spans where no source exists.
/// Maps the composition's own time to the session's and back.
public struct CompositionTimeline: Sendable, Equatable {
    public struct Span: Sendable, Equatable {
        /// Milliseconds on the session's timeline, end exclusive.
        public var start: Int64
        public var end: Int64

        public init(start: Int64, end: Int64) { (self.start, self.end) = (start, end) }
    }

    public private(set) var kept: [Span]

    /// Spans in time order, clipped to `from..<to`; empty ones are dropped.
    public init(kept spans: [Span], from: Int64, to: Int64) {
        kept = spans.sorted { $0.start < $1.start }.compactMap { span in
            let clipped = Span(start: max(span.start, from), end: min(span.end, to))
            return clipped.end > clipped.start ? clipped : nil
        }
    }

    /// The whole of `from..<to`.
    public init(from: Int64, to: Int64) { self.init(kept: [Span(start: from, end: to)], from: from, to: to) }

    /// `0..<end` less `cuts` (spans nobody is in), clipped to `from..<to`.
    public init(cutting cuts: [Span], end: Int64, from: Int64, to: Int64) {
        var spans: [Span] = []
        var position: Int64 = 0
        for cut in cuts.sorted(by: { $0.start < $1.start }) {
            if cut.start > position { spans.append(Span(start: position, end: cut.start)) }
            position = max(position, cut.end)
        }
        if end > position { spans.append(Span(start: position, end: end)) }
        self.init(kept: spans, from: from, to: to)
    }

    /// The composition's length in milliseconds.
    public var length: Int64 { kept.reduce(0) { $0 + ($1.end - $1.start) } }
    /// Where the composition starts on the session's timeline.
    public var start: Int64 { kept.first?.start ?? 0 }

    /// The session time shown at `output` milliseconds into the composition (past the end: the end).
    public func sessionTime(at output: Int64) -> Int64 {
        var remaining = output
        for span in kept {
            if remaining < span.end - span.start { return span.start + remaining }
            remaining -= span.end - span.start
        }
        return kept.last?.end ?? output
    }

    /// Where session time `time` lands in the composition, or nil when it is cut or outside.
    public func outputTime(at time: Int64) -> Int64? {
        var before: Int64 = 0
        for span in kept {
            if time >= span.start && time < span.end { return before + time - span.start }
            before += span.end - span.start
        }
        return nil
    }
}
