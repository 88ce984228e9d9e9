import ServiceCore
import Testing

/// A form's query string as a browser sends it (the archive's search and filter forms).
struct FormQueryTests {
    @Test func plusIsASpaceAndEscapesAreBytes() {
        let query = FormQuery("q=late+message&channel=a%2Bb&since=7d&kind=")
        #expect(query.get("q") == "late message" && query.get("channel") == "a+b" && query.get("since") == "7d" && query.get("kind") == "")
        #expect(FormQuery("q=%E5%A5%91%E7%B4%84").get("q") == "契約", "UTF-8 bytes")
        #expect(FormQuery("q=a&q=b").get("q") == "a", "the first value")
        #expect(FormQuery(nil).get("q") == nil && FormQuery("").pairs.isEmpty && FormQuery("flag").get("flag") == "")
    }

    @Test func malformedInputIsKeptNotTrusted() {
        #expect(FormQuery("q=100%&r=%zz%4").get("q") == "100%")
        #expect(FormQuery("q=100%&r=%zz%4").get("r") == "%zz%4")
        #expect(FormQuery("q=%FF%FE").get("q") == "\u{FFFD}\u{FFFD}", "invalid UTF-8 is replaced")
        #expect(FormQuery("q=a=b").get("q") == "a=b")
        let many = (0..<1_000).map { "k\($0)=v" }.joined(separator: "&")
        #expect(FormQuery(many).pairs.count == FormQuery.maximumPairs)
    }
}
