import Foundation
import Testing
@testable import MeishiText

/// Look-alike names share a key; honestly different names do not (issue 8, section 4).
@Suite struct NameSkeletonTests {
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

    /// The ASCII table is read from the first lines of the confusables table alone: it must be
    /// what the whole table says of every ASCII code point (the generator sorts the table).
    @Test func theASCIITableIsTheWholeTablesASCIIPart() {
        for b in 0..<128 {
            let whole: [UInt8]?? = NameSkeleton.prototypes[UInt32(b)].map { p in p.allSatisfy(\.isASCII) ? p.map { UInt8($0.value) } : nil }
            #expect(NameSkeleton.asciiPrototypes[b] == whole, "byte \(b)")
        }
        let sources = NameSkeleton.mappings(below: .max).map(\.source)
        #expect(sources.count == 6311 && sources == sources.sorted() && Set(sources).count == sources.count)
        #expect(NameSkeleton.mappings(below: 0x80).map(\.source) == sources.filter { $0 < 0x80 })
    }
}
