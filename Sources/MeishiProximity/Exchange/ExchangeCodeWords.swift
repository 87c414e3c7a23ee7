import Foundation

/// Help with the words of a code as typed (magic-wormhole #106, #426): completion from the word
/// list generated codes use, and a typo corrected to the one list word it is one edit away from.
extension ExchangeCode {
    /// A typed word read as a list word.
    public struct Correction: Equatable, Sendable {
        public let typed: String
        public let word: String
    }

    /// Every word a generated code can hold (the PGP word list: even and odd words).
    static let listWords: Set<String> = Set(CodeWords.even + CodeWords.odd)
    /// The same words as bytes (all ASCII): a typed ASCII word is compared with them byte by byte.
    static let listWordBytes: [[UInt8]] = listWords.map { Array($0.utf8) }

    /// Shell completions of a partly typed code `N-word-wo`: the code with its last word
    /// completed from the list (even words first, as generated codes have them; odd words after
    /// the first word). Nothing before the `N-`.
    public static func completions(of typed: String) -> [String] {
        let parts = typed.lowercased().split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, !parts[0].isEmpty, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }) else { return [] }
        let head = parts.dropLast().joined(separator: "-") + "-", last = parts[parts.count - 1]
        let words = parts.count == 2 ? CodeWords.even : CodeWords.odd
        return words.filter { $0.hasPrefix(last) }.map { head + $0 }
    }

    /// `typed` with each word that is not on the list but is one edit (a letter missing, added,
    /// changed, or two swapped) from exactly one list word replaced by it, and what was replaced.
    /// Words under 4 letters are kept: too many list words are one edit from them. Both sides
    /// correct the same way, so a code typed with the same typo still matches.
    public static func correcting(_ typed: String) -> (code: String, corrections: [Correction]) {
        let trimmed = typed.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let dash = trimmed.firstIndex(of: "-") else { return (typed, []) }
        var corrections: [Correction] = []
        let words = trimmed[trimmed.index(after: dash)...].split(separator: "-", omittingEmptySubsequences: false).map { word -> String in
            let w = word.lowercased()
            guard w.count >= 4, !listWords.contains(w) else { return String(word) }
            // Every word of every typed code meets all 512 list words: an ASCII word (for which
            // bytes are characters) is compared as bytes, most list words ruled out by length.
            let near: [String]
            if w.utf8.allSatisfy({ $0 < 0x80 }) {
                let typed = Array(w.utf8)
                near = listWordBytes.filter { abs($0.count - typed.count) <= 1 && isOneEdit(typed, $0) }
                    .map { String(decoding: $0, as: UTF8.self) }
            } else {
                near = listWords.filter { isOneEdit(w, $0) }
            }
            guard near.count == 1, let fixed = near.first else { return String(word) }
            corrections.append(Correction(typed: String(word), word: fixed))
            return fixed
        }
        guard !corrections.isEmpty else { return (typed, []) }
        return (trimmed[..<dash] + "-" + words.joined(separator: "-"), corrections)
    }

    /// One insertion, deletion, substitution or swap of neighbours turns `a` into `b`.
    static func isOneEdit(_ a: String, _ b: String) -> Bool { isOneEdit(Array(a), Array(b)) }

    /// `isOneEdit` over the letters (characters or bytes) of two words.
    static func isOneEdit<Letter: Equatable>(_ x: [Letter], _ y: [Letter]) -> Bool {
        if x == y || abs(x.count - y.count) > 1 { return false }
        if x.count == y.count {
            let differ = x.indices.filter { x[$0] != y[$0] }
            if differ.count == 1 { return true }
            return differ.count == 2 && differ[1] == differ[0] + 1 && x[differ[0]] == y[differ[1]] && x[differ[1]] == y[differ[0]]
        }
        let (short, long) = x.count < y.count ? (x, y) : (y, x)
        var i = 0
        while i < short.count, short[i] == long[i] { i += 1 }
        return short[i...] == long[(i + 1)...]
    }
}
