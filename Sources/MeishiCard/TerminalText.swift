/// Makes text from other people safe to print on a terminal.
public enum TerminalText {
    /// Scalars a terminal could interpret: C0 and C1 controls, DEL, and the bidi overrides,
    /// embeddings and isolates that can reorder what is shown (Trojan Source, CVE-2021-42574).
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        case 0x2028, 0x2029: return true
        default: return false
        }
    }

    /// `text` with every unsafe scalar shown as a visible escape (`\u{1B}`) instead.
    public static func sanitized(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = String.UnicodeScalarView()
        for s in text.unicodeScalars {
            if isUnsafe(s) {
                out.append(contentsOf: "\\u{\(String(s.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(s)
            }
        }
        return String(out)
    }
}
