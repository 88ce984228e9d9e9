import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// The XML S3 answers with, read by Foundation's XMLParser (libxml2) into a small tree. A
/// response is hostile input like any other: its size is capped before parsing, and so are the
/// elements kept, and namespaces are ignored (servers differ on them).
struct XMLElementNode {
    var name: String
    var text = ""
    var children: [XMLElementNode] = []

    static let maximumBytes = 4 << 20
    static let maximumElements = 100_000

    static func parse(_ data: Data) -> XMLElementNode? {
        guard data.count <= maximumBytes else { return nil }
        // AWS may send whitespace before the XML declaration (keep-alive during a long
        // CompleteMultipartUpload), which XML forbids; and S3 never sends a DOCTYPE, whose
        // entities Foundation's parser on Linux would expand.
        let body = data.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard body.range(of: Data("<!DOCTYPE".utf8)) == nil, body.range(of: Data("<!ENTITY".utf8)) == nil else { return nil }
        let builder = TreeBuilder()
        let parser = XMLParser(data: Data(body))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        guard parser.parse(), !builder.overflowed else { return nil }
        return builder.root
    }

    func child(_ name: String) -> XMLElementNode? { children.first { $0.name == name } }
    func children(_ name: String) -> [XMLElementNode] { children.filter { $0.name == name } }
    func text(_ name: String) -> String? { child(name)?.text.trimmingCharacters(in: .whitespacesAndNewlines) }

    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [XMLElementNode] = []
        var root: XMLElementNode?
        var count = 0
        var overflowed = false

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            count += 1
            if count > XMLElementNode.maximumElements { overflowed = true; parser.abortParsing(); return }
            stack.append(XMLElementNode(name: name))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard let node = stack.popLast() else { return }
            if stack.isEmpty { root = node } else { stack[stack.count - 1].children.append(node) }
        }
    }
}

/// The parts of S3's answers recbot uses.
enum S3Responses {
    /// `<Error><Code>…</Code><Message>…</Message></Error>` (also sent with 200 by CompleteMultipartUpload).
    static func error(_ data: Data) -> (code: String?, message: String?)? {
        guard let root = XMLElementNode.parse(data), root.name == "Error" else { return nil }
        return (root.text("Code"), root.text("Message"))
    }

    static func uploadID(_ data: Data) -> String? {
        guard let root = XMLElementNode.parse(data), root.name == "InitiateMultipartUploadResult",
              let id = root.text("UploadId"), !id.isEmpty else { return nil }
        return id
    }

    struct PartsPage: Equatable {
        var parts: [StoredPart]
        /// Where the next page starts, when this one was truncated.
        var nextMarker: Int?
    }

    static func parts(_ data: Data) -> PartsPage? {
        guard let root = XMLElementNode.parse(data), root.name == "ListPartsResult" else { return nil }
        var parts: [StoredPart] = []
        for node in root.children("Part") {
            guard let number = node.text("PartNumber").flatMap(Int.init), let etag = node.text("ETag"),
                  let size = node.text("Size").flatMap(Int64.init), number >= 1, size >= 0 else { return nil }
            parts.append(StoredPart(number: number, etag: etag, size: size))
        }
        let truncated = root.text("IsTruncated") == "true"
        let marker = root.text("NextPartNumberMarker").flatMap(Int.init)
        return PartsPage(parts: parts, nextMarker: truncated ? marker : nil)
    }

    static func completedETag(_ data: Data) -> String? {
        guard let root = XMLElementNode.parse(data), root.name == "CompleteMultipartUploadResult" else { return nil }
        return root.text("ETag")
    }

    /// The body of CompleteMultipartUpload.
    static func completionBody(_ parts: [(number: Int, etag: String)]) -> String {
        let items = parts.map { "<Part><PartNumber>\($0.number)</PartNumber><ETag>\(escape($0.etag))</ETag></Part>" }
        return "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\(items.joined())</CompleteMultipartUpload>"
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// A part the server holds for an unfinished multipart upload.
public struct StoredPart: Sendable, Equatable {
    public var number: Int
    public var etag: String
    public var size: Int64
}
