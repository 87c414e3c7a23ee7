/// Makes text from other people safe to print on a terminal.
///
/// The rule every output path follows (docs/SECURITY.md): a scalar that is `isUnsafe` or
/// `isInvisible` is shown as a visible escape, `\u{1B}`. Escapes are plain ASCII, so
/// `sanitized` is idempotent: text that was already sanitised passes unchanged, and a value
/// escaped where it is put into a message is not escaped again when the whole message is.
/// A backslash is not escaped, so peer text that spells `\u{1B}` looks like an escaped ESC:
/// harmless, since it is only text.
public enum TerminalText {
    /// Scalars a terminal could interpret: C0 and C1 controls, DEL, and the bidi overrides,
    /// embeddings and isolates that can reorder what is shown (Trojan Source, CVE-2021-42574).
    /// Card edits refuse them; display escapes them.
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        case 0x2028, 0x2029: return true
        default: return false
        }
    }

    /// Default-ignorable scalars that show nothing and so can hide inside a name (`Alice` +
    /// U+200B looks like `Alice`): zero-width space, non-joiner and joiner, word joiner and the
    /// invisible operators, the BOM, soft hyphen, combining grapheme joiner, Hangul fillers,
    /// the Mongolian vowel separator, deprecated format controls, interlinear annotation
    /// controls, shorthand and musical format controls, and the tag characters (U+E0000–E007F)
    /// with the rest of that unassigned plane-14 block. Variation selectors (U+FE00–FE0F,
    /// U+E0100–E01EF) and the Mongolian free variation selectors stay: they only pick a glyph
    /// for the character before them (emoji, CJK variants).
    ///
    /// U+200C and U+200D are needed inside Persian, Indic and emoji text; `sanitized` keeps
    /// them between two visible non-ASCII characters and escapes them anywhere else.
    public static func isInvisible(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00AD, 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180E, 0x3164, 0xFFA0: return true
        case 0x200B...0x200D, 0x2060...0x2065, 0x206A...0x206F, 0xFEFF, 0xFFF9...0xFFFB: return true
        case 0x1BCA0...0x1BCA3, 0x1D173...0x1D17A: return true
        case 0xE0000...0xE00FF, 0xE01F0...0xE0FFF: return true
        default: return false
        }
    }

    /// True when `s` is escaped on display (outside the joiner context `sanitized` allows).
    public static func isEscaped(_ s: Unicode.Scalar) -> Bool { isUnsafe(s) || isInvisible(s) }

    /// The most combining marks kept on one character: written languages stack at most a few
    /// (Vietnamese two, Hebrew or Indic pointing three or four); "Zalgo" text stacks hundreds,
    /// which a terminal draws over the lines above and below. The rest are escaped.
    public static let combiningMarksKept = 4

    static func isCombiningMark(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// `text` with every unsafe or invisible scalar, and every combining mark beyond
    /// `combiningMarksKept` in a row, shown as a visible escape (`\u{1B}`) instead.
    /// With `keepingNewlines`, U+000A stays (a message of several lines written by meishi).
    public static func sanitized(_ text: String, keepingNewlines: Bool = false) -> String {
        // Fast paths: printable ASCII, then text without any scalar that could be escaped.
        if text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) || (keepingNewlines && $0 == 0x0A) }) { return text }
        var marksInARow = 0
        let stacked = text.unicodeScalars.contains { s in
            marksInARow = isCombiningMark(s) ? marksInARow + 1 : 0
            return marksInARow > combiningMarksKept
        }
        guard stacked || text.unicodeScalars.contains(where: { isEscaped($0) && !(keepingNewlines && $0.value == 0x0A) }) else { return text }
        let scalars = Array(text.unicodeScalars)
        var run = [Int](repeating: 0, count: scalars.count)  // combining marks in a row up to each scalar
        for n in scalars.indices where isCombiningMark(scalars[n]) { run[n] = (n > 0 ? run[n - 1] : 0) + 1 }
        func escapes(_ n: Int) -> Bool {
            let s = scalars[n]
            if keepingNewlines && s.value == 0x0A { return false }
            if run[n] > combiningMarksKept { return true }
            if s.value == 0x200C || s.value == 0x200D {
                // A joiner between two visible non-ASCII characters (emoji sequences, Persian,
                // Indic conjuncts) is part of the text; anywhere else it only hides.
                guard n > 0, n + 1 < scalars.count else { return true }
                let (a, b) = (scalars[n - 1], scalars[n + 1])
                return a.isASCII || b.isASCII || isEscaped(a) || isEscaped(b) || a.properties.isWhitespace
                    || b.properties.isWhitespace
            }
            return isEscaped(s)
        }
        guard scalars.indices.contains(where: escapes) else { return text }  // only joiners, all kept
        var out = String.UnicodeScalarView()
        for n in scalars.indices {
            if escapes(n) {
                out.append(contentsOf: "\\u{\(String(scalars[n].value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalars[n])
            }
        }
        return String(out)
    }

    /// `text` sanitised and in double quotes, for naming peer text inside a message.
    public static func quoted(_ text: String) -> String { "\"" + sanitized(text) + "\"" }

    /// True when `text` holds U+0000, which meishi refuses in every value (C APIs, SQLite
    /// functions and terminals would cut the text there).
    public static func containsNUL(_ text: String) -> Bool { text.utf8.contains(0) }
}
