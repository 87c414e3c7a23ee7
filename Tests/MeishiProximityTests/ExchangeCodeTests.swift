import Testing
@testable import MeishiProximity

@Suite struct ExchangeCodeTests {
    @Test func parsesTypedCodes() throws {
        let c = try ExchangeCode(parsing: "  7-Tulip-Anchor\n")
        #expect(c.nameplate == 7 && c.password == "tulip-anchor" && c.description == "7-tulip-anchor")
        #expect(try ExchangeCode(parsing: "999-xylophone").nameplate == 999)
        #expect(try ExchangeCode(parsing: "12-caf\u{E9}-au-lait") == ExchangeCode(parsing: "12-cafe\u{301}-au-lait"))
    }

    @Test(arguments: ["", "7", "7-", "-tulip", "tulip-anchor", "07-x", "x7-a", "7--a", "7-a-", "7-a b", "7-a\u{1B}b", "+7-a"])
    func refusesOtherShapes(_ text: String) {
        #expect(throws: ExchangeCodeError.self) { try ExchangeCode(parsing: text) }
    }

    @Test func nameplateRangeAndLength() throws {
        #expect(throws: ExchangeCodeError.nameplateOutOfRange("0-a")) { try ExchangeCode(parsing: "0-a") }
        #expect(throws: ExchangeCodeError.nameplateOutOfRange("1000-a")) { try ExchangeCode(parsing: "1000-a") }
        #expect(throws: ExchangeCodeError.tooLong(66)) { try ExchangeCode(parsing: "1-" + String(repeating: "a", count: 64)) }
        // A one-letter password would give a nearby attacker's three tries a real chance.
        #expect(throws: ExchangeCodeError.tooShort(1)) { try ExchangeCode(parsing: "3-a") }
        #expect(throws: ExchangeCodeError.tooShort(5)) { try ExchangeCode(parsing: "3-tulip") }
        #expect(try ExchangeCode(parsing: "3-coffee").password == "coffee")
        for _ in 0..<100 { #expect(ExchangeCode.random().password.count >= ExchangeCode.minimumPasswordCharacters + 3) }
    }

    @Test func generatedCodesUseTwoPGPWords() throws {
        #expect(CodeWords.even.count == 256 && CodeWords.odd.count == 256 && Set(CodeWords.even + CodeWords.odd).count == 512)
        var seen = Set<String>()
        for _ in 0..<200 {
            let c = ExchangeCode.random()
            let words = c.password.split(separator: "-").map(String.init)
            #expect(words.count == 2 && CodeWords.even.contains(words[0]) && CodeWords.odd.contains(words[1]), "\(c)")
            #expect((1...999).contains(c.nameplate))
            #expect(try ExchangeCode(parsing: c.description) == c)
            seen.insert(c.description)
        }
        #expect(seen.count > 190)
    }

    /// A word one typo from exactly one list word is read as it (magic-wormhole #106, #426).
    @Test func aTypoIsReadAsTheOneListWordItIsNear() {
        let (code, corrections) = ExchangeCode.correcting("7-aardvak-ADROITNES")
        #expect(code == "7-aardvark-adroitness")
        #expect(corrections == [.init(typed: "aardvak", word: "aardvark"), .init(typed: "ADROITNES", word: "adroitness")])
        // Swapped letters, an extra letter, a changed letter.
        #expect(ExchangeCode.correcting("12-aardvrak-aftermaths").code == "12-aardvark-aftermath")
        #expect(ExchangeCode.correcting("12-aardvark-aftermatx").code == "12-aardvark-aftermath")
        // List words, made-up words, words under 4 letters, a word one edit from two list words
        // ("amme": acme, ammo) and codes without a dash stay as typed.
        for typed in ["7-aardvark-adroitness", "7-secret-words", "7-tulip-anchor", "7-amme-xyzzyx", "7-acm-aardvark", "tulp"] {
            #expect(ExchangeCode.correcting(typed).corrections.isEmpty, "\(typed)")
            #expect(ExchangeCode.correcting(typed).code == typed)
        }
        #expect(ExchangeCode.isOneEdit("tulp", "tulip") && ExchangeCode.isOneEdit("tuilp", "tulip") && !ExchangeCode.isOneEdit("tlpu", "tulip"))
    }

    /// The byte comparison of ASCII words finds what the character comparison finds: every word
    /// one edit (or two) from a list word, corrected the same way; a non-ASCII typo is still read.
    @Test func typedWordsAreCorrectedAsCharacterByCharacter() {
        var rng = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        for word in ExchangeCode.listWords.shuffled(using: &rng).prefix(120) {
            var typo = Array(word)
            for _ in 0..<Int.random(in: 1...2, using: &rng) {
                let i = Int.random(in: 0..<typo.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: typo[i] = letters.randomElement(using: &rng)!
                case 1: typo.insert(letters.randomElement(using: &rng)!, at: i)
                default: if typo.count > 4 { typo.remove(at: i) }
                }
            }
            let w = String(typo)
            let near = ExchangeCode.listWords.filter { ExchangeCode.isOneEdit(w, $0) }
            let expected = w.count >= 4 && !ExchangeCode.listWords.contains(w) && near.count == 1 ? near.first! : w
            #expect(ExchangeCode.correcting("7-\(w)-\(w)").code == (expected == w ? "7-\(w)-\(w)" : "7-\(expected)-\(expected)"), "\(w)")
        }
        #expect(ExchangeCode.correcting("7-aardvárk-xyzzyx").code == "7-aardvark-xyzzyx")
    }

    @Test func completionsFollowTheWordOrderOfGeneratedCodes() {
        #expect(ExchangeCode.completions(of: "7-aardv") == ["7-aardvark"])
        #expect(ExchangeCode.completions(of: "7-aardvark-adv") == ["7-aardvark-adviser"])
        #expect(ExchangeCode.completions(of: "7-").count == 256)
        #expect(ExchangeCode.completions(of: "7").isEmpty && ExchangeCode.completions(of: "x-a").isEmpty)
    }
}
