import Archive

/// The session timeline as inline SVG: no script needed to read it; each file links to its
/// player and each message tick to the moment it arrived.
public enum TimelineSVG {
    static let labelWidth = 170.0
    static let axisWidth = 860.0
    static let rowHeight = 26.0
    static let axisHeight = 22.0

    /// A coordinate with at most one decimal (SVG needs no more, and a page of floats is long).
    static func n(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return tenths % 10 == 0 ? String(tenths / 10) : String(format: "%.1f", Double(tenths) / 10)
    }

    public static func render(_ timeline: SessionTimeline) -> String {
        let rowCount = timeline.rows.count + 1
        let height = axisHeight + Double(rowCount) * rowHeight + 4
        let width = labelWidth + axisWidth + 10
        var svg = "<svg class=\"timeline\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" width=\"\(Int(width))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"Session timeline\">\n"
        svg += axis(timeline, height: height)
        for span in timeline.interruptions {
            let (x0, x1) = (labelWidth + timeline.x(span.start, width: axisWidth), labelWidth + timeline.x(span.end, width: axisWidth))
            svg += "<rect class=\"outage\" x=\"\(n(x0))\" y=\"\(n(axisHeight))\" width=\"\(n(max(1, x1 - x0)))\" height=\"\(n(height - axisHeight))\">"
                + "<title>outage: \(WebFormat.duration(milliseconds: span.end - span.start))</title></rect>\n"
        }
        svg += sessionRow(timeline)
        for (index, row) in timeline.rows.enumerated() {
            svg += senderRow(row, top: axisHeight + Double(index + 1) * rowHeight, timeline: timeline)
        }
        return svg + "</svg>\n"
    }

    private static func axis(_ timeline: SessionTimeline, height: Double) -> String {
        let length = timeline.span.end - timeline.span.start
        let step = tickStep(length)
        var out = ""
        var offset: Int64 = 0
        while offset <= length {
            let x = labelWidth + timeline.x(timeline.span.start + offset, width: axisWidth)
            out += "<line class=\"grid\" x1=\"\(n(x))\" y1=\"\(n(axisHeight - 4))\" x2=\"\(n(x))\" y2=\"\(n(height))\"/>"
                + "<text class=\"axis\" x=\"\(n(x))\" y=\"\(n(axisHeight - 8))\">\(WebFormat.duration(milliseconds: offset))</text>\n"
            offset += step
        }
        return out
    }

    /// About 6 to 12 labels, on round steps.
    static func tickStep(_ length: Int64) -> Int64 {
        let steps: [Int64] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 21_600, 43_200, 86_400].map { $0 * 1000 }
        return steps.first { length / $0 <= 10 } ?? steps.last!
    }

    private static func sessionRow(_ timeline: SessionTimeline) -> String {
        let top = axisHeight
        var out = "<text class=\"label\" x=\"4\" y=\"\(n(top + rowHeight * 0.65))\">session</text>\n"
        for x in distinctPixels(timeline.sessionTicks, timeline) {
            out += "<line class=\"tick notify\" x1=\"\(n(x))\" y1=\"\(n(top + 4))\" x2=\"\(n(x))\" y2=\"\(n(top + rowHeight - 4))\"/>"
        }
        return out + "\n"
    }

    private static func senderRow(_ row: SessionTimeline.Row, top: Double, timeline: SessionTimeline) -> String {
        var out = "<text class=\"label\" x=\"4\" y=\"\(n(top + rowHeight * 0.65))\"><title>\(HTML.escape(row.connectionID))</title>\(HTML.escape(String(row.connectionID.prefix(20))))</text>\n"
        if let presence = row.presence {
            let (x0, x1) = (labelWidth + timeline.x(presence.start, width: axisWidth), labelWidth + timeline.x(presence.end, width: axisWidth))
            out += "<rect class=\"presence\" x=\"\(n(x0))\" y=\"\(n(top + rowHeight - 7))\" width=\"\(n(max(1, x1 - x0)))\" height=\"3\"><title>connected</title></rect>\n"
        }
        // A split session has the whole file and its parts side by side: the parts get a lane of their own.
        let split = row.parts.contains { $0.part > 0 } && row.parts.contains { $0.part == 0 }
        for part in row.parts {
            let (x0, x1) = (labelWidth + timeline.x(part.span.start, width: axisWidth), labelWidth + timeline.x(part.span.end, width: axisWidth))
            let (y, height) = split ? (part.part == 0 ? (top + 3, 7.0) : (top + 11, 7.0)) : (top + 4, rowHeight - 13)
            let title = "part \(part.part) · \(part.codecs.isEmpty ? "no media" : part.codecs) · \(WebFormat.duration(milliseconds: part.span.end - part.span.start)) · \(part.status.rawValue)"
            let rect = "<rect class=\"part \(part.status.rawValue)\" x=\"\(n(x0))\" y=\"\(n(y))\" width=\"\(n(max(1, x1 - x0)))\" height=\"\(n(height))\"><title>\(HTML.escape(title))</title></rect>"
            out += part.recordingID.map { "<a href=\"\(WebPaths.recording($0))\">\(rect)</a>\n" } ?? rect + "\n"
        }
        var drawn = Set<Int>()
        for time in row.ticks {
            let x = labelWidth + timeline.x(time, width: axisWidth)
            guard drawn.insert(Int(x)).inserted else { continue }  // one tick per pixel: a busy chat stays a small page
            let line = "<line class=\"tick message\" x1=\"\(n(x))\" y1=\"\(n(top + 2))\" x2=\"\(n(x))\" y2=\"\(n(top + rowHeight - 9))\"/>"
            if let part = row.parts.first(where: { $0.span.start <= time && time <= $0.span.end }), let id = part.recordingID {
                out += "<a href=\"\(WebPaths.moment(id, milliseconds: time - part.span.start))\">\(line)</a>"
            } else {
                out += line
            }
        }
        return out + "\n"
    }

    private static func distinctPixels(_ times: [Int64], _ timeline: SessionTimeline) -> [Double] {
        var seen = Set<Int>()
        return times.map { labelWidth + timeline.x($0, width: axisWidth) }.filter { seen.insert(Int($0)).inserted }
    }
}
