import Testing
@testable import Archive

/// The escape both catalogs store free text with: lossless, and the identity on ordinary text.
@Suite struct CatalogTextTests {
    @Test(arguments: ["", "plain", "日本語 é", "\u{0}", "a\u{0}b", "\u{FFFF}", "\u{FFFF}0", "\u{FFFF}\u{FFFF}", "x\u{FFFF}", "\u{0}\u{FFFF}\u{0}0"])
    func roundTrips(_ text: String) {
        let stored = CatalogText.stored(text)
        #expect(!stored.unicodeScalars.contains("\u{0}"))
        #expect(CatalogText.loaded(stored) == text)
    }

    @Test func ordinaryTextIsStoredAsItIs() {
        for text in ["connection.created", "{\"a\":\"\\u0000\"}", "ｴｸｽﾄﾗ", "\u{FFFE}"] {
            #expect(CatalogText.stored(text) == text)
            #expect(CatalogText.loaded(text) == text)
        }
    }

    @Test func anEscapeStoredBeforeTheEscapeExistedReadsAsItWas() {
        // Only "\u{FFFF}0" and "\u{FFFF}\u{FFFF}" are escapes; anything else stays.
        #expect(CatalogText.loaded("a\u{FFFF}b\u{FFFF}") == "a\u{FFFF}b\u{FFFF}")
    }
}
