import Foundation
import Testing
import MeishiCrypto
@testable import MeishiCard

/// What peer text may do: terminal escapes, invisible characters, look-alike names, member names
/// that are canonically equivalent to real ones, NUL (issue 8, section 4).
@Suite struct PeerTextTests {
    // MARK: Terminal text

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

    @Test func sanitisingTwiceIsSanitisingOnce() {
        for s in ["a\u{1B}[31mb", "Alice\u{200B}\u{E0041}", "\u{202E}x\ny\u{0}", "plain", "\\u{1B} typed by hand"] {
            let once = TerminalText.sanitized(s)
            #expect(TerminalText.sanitized(once) == once)
            #expect(TerminalText.sanitized(once, keepingNewlines: true) == once)
            #expect(!once.unicodeScalars.contains(where: TerminalText.isEscaped))
        }
    }

    // MARK: Names

    @Test(arguments: ["Alice", "Alice\u{200B}", "\u{410}lice", "Ａｌｉｃｅ", "aLiCe", "ALICE", "Al\u{2060}ice\u{FEFF}",
                      " Alice ", "Alice\u{E0041}", "\u{1D400}lice", "A\u{217C}ice", "\u{391}lice", "\u{430}lice\u{200D}"])
    func lookAlikesShareTheFoldedSkeletonOfAlice(_ name: String) {
        #expect(NameSkeleton.folded(name) == NameSkeleton.folded("Alice"), "\(name.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(NameSkeleton.confusable(name, "Alice"))
    }

    @Test func aCapitalILooksLikeASmallL() {
        #expect(NameSkeleton.asTyped("AIice") == NameSkeleton.asTyped("Alice"))
        #expect(NameSkeleton.confusable("AIice", "Alice"))
        #expect(NameSkeleton.confusable("PayPaI", "PayPal"))
        // Each key is an equivalence of its own: the union does not make i and l one letter.
        #expect(!NameSkeleton.confusable("Aiice", "Alice"))
    }

    @Test func honestlyDifferentNamesDiffer() {
        for other in ["Alicia", "Alice Tanaka", "Bob", "Alive", "Ali ce", "アリス", "\u{200B}"] {
            #expect(!NameSkeleton.confusable(other, "Alice"), "\(other)")
        }
        #expect(NameSkeleton.confusable("Mei  Tanaka", "mei tanaka"))
        #expect(NameSkeleton.confusable("Straße", "STRASSE"))
        #expect(NameSkeleton.folded("\u{200B}\u{200D}") == "")
        #expect(!NameSkeleton.confusable("\u{200B}", "\u{200D}"))
        #expect(NameSkeleton.confusablesVersion == "13.0.0")
    }

    @Test func theASCIIFastPathComputesTheSameKeys() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array(0x09...0x7E).map { Character(Unicode.Scalar(UInt8($0))) }
        var samples = ["Alice", "ALICE", "AIice", "m1l0 |x|", "100% sure", "  Mei\tTanaka  ", "\"quoted\" `tick`", ""]
        for _ in 0..<500 { samples.append(String((0..<Int.random(in: 1...12, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })) }
        for s in samples {
            let folded = NameSkeleton.spaced(NameSkeleton.mapped(s.precomposedStringWithCompatibilityMapping
                .folding(options: [.caseInsensitive], locale: nil)).folding(options: [.caseInsensitive], locale: nil))
            let typed = NameSkeleton.spaced(NameSkeleton.mapped(s.precomposedStringWithCompatibilityMapping))
            #expect(NameSkeleton.folded(s) == folded, "\(s.debugDescription)")
            #expect(NameSkeleton.asTyped(s) == typed, "\(s.debugDescription)")
        }
    }

    // MARK: Member names are bytes

    @Test func kelvinSignIsNotK() throws {
        let kelvin = "pub\u{212A}ey"
        #expect(kelvin == "pubKey")  // what Swift's String == says: canonical equivalence
        #expect(!JSONValue.sameName(kelvin, "pubKey"))
        let obj = try StrictJSONParser.parse(Array(#"{"pub\u212aey":1,"pubKey":2}"#.utf8))
        #expect(obj["pubKey"] == .number(2))
        #expect(obj[kelvin] == .number(1))
        #expect(try StrictJSONParser.parse(Array(#"{"pub\u212aey":1}"#.utf8))["pubKey"] == nil)
        #expect(JSONValue.object([(key: kelvin, value: .null)]) != JSONValue.object([(key: "pubKey", value: .null)]))
        #expect(throws: JSONParseError.self) { try StrictJSONParser.parse(Array(#"{"a\u0041":1,"aA":2}"#.utf8)) }
    }

    @Test func fieldNamesAreBytes() {
        #expect(throws: CardError.self) { try FieldName("x-\u{212A}") }
        #expect((try? FieldName("note")) != nil)
        #expect(throws: CardError.self) { try FieldName("note\u{301}") }
    }

    static func signedPayload(_ fields: [FieldName: FieldValue]) -> ProximityPayload {
        let key = Ed25519.SigningKey()
        var p = try! ProximityPayload.sign(disclosed: [.name: ["Eve"]], level: .public, signingKey: key,
                                           boxKey: X25519.SecretKey().publicKey, timestamp: 1_800_000_000).payload
        p.cardFields = fields
        return p.signed(with: key).payload
    }

    @Test func aKelvinMemberIsMalformedEvenWhenTheSignatureCoversPubKey() throws {
        let p = Self.signedPayload([.name: .single("Eve")])
        let text = String(decoding: p.canonicalJSON, as: UTF8.self).replacingOccurrences(of: "\"pubKey\":", with: "\"pub\\u212aey\":")
        let verifier = CardVerifier(clock: { 1_800_000_000 })
        #expect(throws: PayloadError.self) { try verifier.verify(Array(text.utf8)) }
        do { _ = try verifier.verify(Array(text.utf8)) } catch { #expect(error.verdict == "malformed") }
        #expect(try verifier.verify(p.canonicalJSON).payload == p)
    }

    // MARK: NUL

    @Test func aNULInAValueIsMalformedInJSONAndQRText() throws {
        let p = Self.signedPayload([.name: .single("Eve\u{0}Mallory"), .email: .multiple(["e@example.org"])])
        let verifier = CardVerifier(clock: { 1_800_000_000 })
        for bytes in [p.canonicalJSON, Array(CardQRText.encode(p).utf8)] {
            do {
                _ = try verifier.verify(bytes)
                Issue.record("a NUL value was accepted")
            } catch {
                #expect(error.verdict == "malformed")
                #expect(error.reason.contains("NUL"))
            }
        }
        #expect(throws: CardError.self) { var c = Card(); try c.set(.name, "Eve\u{0}") }
    }

    @Test func reasonsQuotePeerTextEscaped() throws {
        let evil = Array(#"{"version":1,"\u001b]0;PWNED\u0007":1}"#.utf8)
        do { _ = try ProximityPayload.parse(evil) } catch {
            #expect(error.reason == #"malformed payload: unknown member "\u{1B}]0;PWNED\u{7}""#)
        }
        do { _ = try StrictJSONParser.parse(Array(#"{"\u009b":1,"\u009b":2}"#.utf8)) } catch {
            #expect(!error.reason.unicodeScalars.contains(where: TerminalText.isEscaped))
        }
    }
}
