import Testing
import MeishiText

/// Peer text on a terminal: controls, bidi overrides and invisible characters are escaped,
/// joiners inside text stay (issue 8, section 4).
@Suite struct TerminalTextTests {
    @Test func escapesControlsAndBidi() {
        #expect(TerminalText.sanitized("Mei\u{1B}[2J") == "Mei\\u{1B}[2J")
        #expect(TerminalText.sanitized("a\u{202E}b\u{2066}") == "a\\u{202E}b\\u{2066}")
        #expect(TerminalText.sanitized("line\nbreak\u{9B}") == "line\\u{A}break\\u{9B}")
        #expect(TerminalText.sanitized("田中 芽衣 😀") == "田中 芽衣 😀")
    }

    @Test func controlsBidiAndInvisiblesAreEscaped() {
        #expect(TerminalText.sanitized("a\u{1B}]0;x\u{7}b") == "a\\u{1B}]0;x\\u{7}b")
        #expect(TerminalText.sanitized("\u{9B}31m") == "\\u{9B}31m")
        #expect(TerminalText.sanitized("gnp\u{202E}exe") == "gnp\\u{202E}exe")
        #expect(TerminalText.sanitized("Alice\u{200B}") == "Alice\\u{200B}")
        #expect(TerminalText.sanitized("Al\u{2060}ice\u{FEFF}") == "Al\\u{2060}ice\\u{FEFF}")
        #expect(TerminalText.sanitized("Alice\u{E0041}\u{E007F}") == "Alice\\u{E0041}\\u{E007F}")
        #expect(TerminalText.sanitized("so\u{AD}ft \u{3164}") == "so\\u{AD}ft \\u{3164}")
        #expect(TerminalText.sanitized("nul\u{0}cut") == "nul\\u{0}cut")
        #expect(TerminalText.sanitized("two\nlines") == "two\\u{A}lines")
        #expect(TerminalText.sanitized("two\nlines\r", keepingNewlines: true) == "two\nlines\\u{D}")
        // Plain text of every script passes unchanged.
        for plain in ["Mei Tanaka", "田中 芽衣", "Ελένη", "Алиса", "😀", "❤️"] { #expect(TerminalText.sanitized(plain) == plain) }
    }

    @Test func joinersStayInsideTextAndAreEscapedElsewhere() {
        let family = "👨\u{200D}👩\u{200D}👧"
        #expect(TerminalText.sanitized(family) == family)
        let persian = "می\u{200C}خواهم"
        #expect(TerminalText.sanitized(persian) == persian)
        #expect(TerminalText.sanitized("Al\u{200D}ice") == "Al\\u{200D}ice")
        #expect(TerminalText.sanitized("Alice\u{200C}") == "Alice\\u{200C}")
        #expect(TerminalText.sanitized("\u{200D}😀") == "\\u{200D}😀")
        #expect(TerminalText.sanitized("😀\u{200D}\u{200D}😀") == "😀\\u{200D}\\u{200D}😀")
    }

    /// 128 combining accents on one letter were printed raw and drawn over the lines above and
    /// below; written languages keep theirs.
    @Test func aStackOfCombiningMarksIsCutToFour() {
        let zalgo = "M" + String(repeating: "\u{301}", count: 128) + "ei"
        let shown = TerminalText.sanitized(zalgo)
        #expect(shown == "M\u{301}\u{301}\u{301}\u{301}" + String(repeating: "\\u{301}", count: 124) + "ei")
        #expect(TerminalText.sanitized(shown) == shown)
        for written in ["Nguyễn Thị Hương", "שָׁלוֹם", "क्षत्रिय", "e\u{301}\u{302}\u{303}\u{304}", "◌⃝"] {
            #expect(TerminalText.sanitized(written) == written)
        }
        #expect(TerminalText.sanitized("e\u{301}\u{302}\u{303}\u{304}\u{305}") == "e\u{301}\u{302}\u{303}\u{304}\\u{305}")
    }

    @Test func sanitisingTwiceIsSanitisingOnce() {
        for s in ["a\u{1B}[31mb", "Alice\u{200B}\u{E0041}", "\u{202E}x\ny\u{0}", "plain", "\\u{1B} typed by hand"] {
            let once = TerminalText.sanitized(s)
            #expect(TerminalText.sanitized(once) == once)
            #expect(TerminalText.sanitized(once, keepingNewlines: true) == once)
            #expect(!once.unicodeScalars.contains(where: TerminalText.isEscaped))
        }
    }
}
