@testable import Archive
import Foundation
import Testing

/// What message search looks in, per payload (issue 44).
struct SearchTextTests {
    @Test func textAndPlainJSONAreSearchedAsStored() {
        #expect(SearchText.of(.text("契約")) == nil)
        #expect(SearchText.of(.json(#"{"a":"契約"}"#)) == nil)
    }

    @Test func escapedJSONIsSearchedAsItsKeysAndStrings() {
        #expect(SearchText.of(.json(#"{"b":["\u5951\u7d04",1,{"c":"x\"y"}],"a":true}"#)) == "a\nb\n契約\nc\nx\"y")
        #expect(SearchText.of(.json(#"not json \u5951"#)) == nil, "invalid JSON is searched as stored")
    }

    @Test func binaryIsSearchedOnlyWhenItIsText() {
        #expect(SearchText.of(.binary(Array("チャット\n".utf8))) == "チャット\n")
        #expect(SearchText.of(.binary([0xE5, 0xA5])) == nil, "a cut UTF-8 sequence")
        #expect(SearchText.of(.binary([0x41, 0x00, 0x42])) == nil, "control characters: not text")
        #expect(SearchText.of(.binary([])) == nil)
        #expect(SearchText.of(.binary(Array(#"{"n":"\u7530"}"#.utf8))) == "n\n田")
    }

    @Test func longTextIsCutAtACharacterBoundary() throws {
        let long = String(repeating: "あ", count: SearchText.maximumBytes)  // 3 bytes each
        let cut = try #require(SearchText.of(.text(long)))
        #expect(cut.utf8.count <= SearchText.maximumBytes && cut.utf8.count > SearchText.maximumBytes - 3)
        #expect(cut.unicodeScalars.allSatisfy { $0 == "あ" })
        let bytes = Array(long.utf8)
        #expect(SearchText.of(.binary(bytes)) == cut, "bytes past the limit are not checked, and a character cut there is dropped")
    }

    @Test func likePatternsEscapeTheirWildcards() {
        #expect(MessageSearch(text: #"50%_a\b"#).likePattern == #"%50\%\_a\\b%"#)
        #expect(MessageSearch(text: "ab").usesTrigrams == false && MessageSearch(text: "契約書").usesTrigrams)
        #expect(Catalog.phrase(#"say "hi""#) == #""say ""hi""""#)
    }
}
