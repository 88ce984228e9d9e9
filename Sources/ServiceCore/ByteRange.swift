import Foundation

/// One `Range: bytes=…` request (RFC 9110 §14.1.2), which is what a browser's media player
/// sends to seek. Several ranges in one request are answered whole (allowed: a server may
/// ignore Range), so only the single-range forms matter.
public enum ByteRange: Equatable, Sendable {
    /// The whole file (no Range header, or one this server ignores).
    case whole
    /// Bytes `lower...upper` of the file.
    case part(ClosedRange<Int64>)
    /// Starts past the end: 416, with the file's size.
    case unsatisfiable

    /// The header's value as it applies to a file of `size` bytes; nil header: whole.
    public init(header: String?, size: Int64) {
        guard let header, header.utf8.count <= 200 else { self = .whole; return }
        let text = header.trimmingCharacters(in: [" ", "\t"])
        guard text.lowercased().hasPrefix("bytes="), !text.contains(",") else { self = .whole; return }
        let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: [" ", "\t"])
        guard let dash = spec.firstIndex(of: "-") else { self = .whole; return }
        let (first, last) = (spec[..<dash], spec[spec.index(after: dash)...])
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit), first.count <= 18, last.count <= 18 else { self = .whole; return }
        switch (Int64(first), Int64(last)) {
        case (let start?, let end):
            if let end, end < start { self = .whole; return }  // invalid: ignored, the whole file
            guard start < size else { self = .unsatisfiable; return }
            self = .part(start...min(end ?? (size - 1), size - 1))
        case (nil, let suffix?):
            guard suffix > 0, size > 0 else { self = size > 0 ? .unsatisfiable : .whole; return }
            self = .part(max(0, size - suffix)...(size - 1))
        case (nil, nil):
            self = .whole
        }
    }
}

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
