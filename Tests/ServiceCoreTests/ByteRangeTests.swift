import ServiceCore
import Testing

/// The Range header a browser's player sends to seek (RFC 9110 §14.1.2).
struct ByteRangeTests {
    @Test func singleRangesAreServedInsideTheFile() {
        #expect(ByteRange(header: "bytes=0-99", size: 1_000) == .part(0...99))
        #expect(ByteRange(header: "bytes=900-", size: 1_000) == .part(900...999))
        #expect(ByteRange(header: "bytes=900-5000", size: 1_000) == .part(900...999), "an end past the file is the file's end")
        #expect(ByteRange(header: "bytes=-100", size: 1_000) == .part(900...999), "the last 100 bytes")
        #expect(ByteRange(header: "bytes=-5000", size: 1_000) == .part(0...999))
        #expect(ByteRange(header: " bytes=5-5 ", size: 1_000) == .part(5...5), "surrounding blanks")
    }

    @Test func aStartPastTheEndIsUnsatisfiable() {
        #expect(ByteRange(header: "bytes=1000-", size: 1_000) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=-0", size: 1_000) == .unsatisfiable)
        #expect(ByteRange(header: "bytes=0-", size: 0) == .unsatisfiable)
    }

    /// What the server may ignore is answered with the whole file, never a trap.
    @Test func otherFormsAreTheWholeFile() {
        for header in [nil, "", "bytes=", "bytes=-", "bytes=5-1", "bytes=0-1,5-9", "items=0-1", "bytes=a-b", "bytes=99999999999999999999-",
                       "bytes=+1-2", "bytes=1-2-3", String(repeating: "9", count: 300)] {
            #expect(ByteRange(header: header, size: 1_000) == .whole, "\(header ?? "nil")")
        }
    }
}
