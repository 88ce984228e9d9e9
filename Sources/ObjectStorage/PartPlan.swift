import Crypto
import Foundation

/// How a file of a given size is cut into parts. S3 allows at most 10,000 parts of at least
/// 5 MiB each (the last may be smaller); a file that fits one part goes up in one PUT.
public struct PartPlan: Sendable, Equatable {
    public static let minimumPartSize: Int64 = 5 << 20
    public static let maximumParts: Int64 = 10_000
    public static let defaultPartSize: Int64 = 16 << 20

    public var fileSize: Int64
    public var partSize: Int64

    /// The part size grows (in whole MiB) when the file would need more than 10,000 parts.
    public init(fileSize: Int64, preferredPartSize: Int64 = defaultPartSize) {
        let needed = (fileSize + Self.maximumParts - 1) / Self.maximumParts
        let mebibyte: Int64 = 1 << 20
        let grown = (needed + mebibyte - 1) / mebibyte * mebibyte
        self.fileSize = fileSize
        self.partSize = max(preferredPartSize, Self.minimumPartSize, grown)
    }

    /// One PUT when the file fits one part.
    public var isSinglePut: Bool { fileSize <= partSize }

    public var partCount: Int { fileSize == 0 ? 1 : Int((fileSize + partSize - 1) / partSize) }

    /// Byte range of part `number` (from 1).
    public func range(ofPart number: Int) -> Range<Int64> {
        let start = Int64(number - 1) * partSize
        return start..<min(start + partSize, fileSize)
    }
}

/// Digests of a file's contents as S3 reports them, to check an upload end to end.
public enum ObjectDigest {
    /// An ETag without its quotes, lowercased.
    public static func normalized(_ etag: String) -> String {
        etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")).lowercased()
    }

    /// The ETag S3 gives an object sent in one PUT: the MD5 of its bytes.
    public static func singleETag(md5: [UInt8]) -> String { md5.hex }

    /// The ETag S3 gives a multipart object: the MD5 of the parts' MD5s, then "-" and the count.
    public static func multipartETag(partMD5s: [[UInt8]]) -> String {
        Insecure.MD5.hash(data: Data(partMD5s.joined())).hex + "-\(partMD5s.count)"
    }

    /// The MD5-shaped ETag this upload should produce, for comparing with the server's. Servers
    /// that encrypt with KMS (or otherwise) answer something else; `matches` then relies on
    /// the per-part Content-MD5 checks the server already made.
    public static func matches(serverETag: String, expected: String) -> Bool {
        let server = normalized(serverETag)
        let isMD5Shaped = server.range(of: "^[0-9a-f]{32}(-[0-9]+)?$", options: .regularExpression) != nil
        return !isMD5Shaped || server == expected
    }
}

/// Which parts of an interrupted upload still need sending: a stored part counts only when
/// its size and MD5 match the local bytes (a file that changed since must not be stitched
/// together from old and new parts).
public enum ResumePlan {
    public static func partsToSend<E: Error>(plan: PartPlan, stored: [StoredPart], localMD5: (Int) throws(E) -> [UInt8]) throws(E) -> (send: [Int], keep: [Int: String]) {
        var byNumber: [Int: StoredPart] = [:]
        for part in stored { byNumber[part.number] = part }
        var send: [Int] = []
        var keep: [Int: String] = [:]
        for number in 1...plan.partCount {
            let range = plan.range(ofPart: number)
            if let part = byNumber[number], part.size == Int64(range.count),
               ObjectDigest.normalized(part.etag) == (try localMD5(number)).hex {
                keep[number] = part.etag
            } else {
                send.append(number)
            }
        }
        return (send, keep)
    }
}
