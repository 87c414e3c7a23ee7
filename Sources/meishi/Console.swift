import MeishiCard
import MeishiText

/// Everything commands print goes through here: results on standard output; errors, warnings
/// and notes on standard error.
///
/// This is the one sanitising choke point for text (docs/SECURITY.md, "What reaches a
/// terminal"): every message `line`, `report`, `warn` and `note` write passes
/// `TerminalText.sanitized`, so a control, bidi or invisible character from a peer is shown as
/// `\u{…}` whatever path brought it here (payload member names in errors, store errors, exchange
/// log lines, REJECT reasons). `line` keeps U+000A, the line breaks meishi writes itself; errors,
/// warnings and notes are one line each, so a newline in them is escaped too. A peer value put
/// inside a multi-line block must therefore pass `safe` where it is interpolated, which escapes
/// its newlines as well. Sanitising is idempotent (escapes are ASCII), so a value escaped at
/// its call site is not escaped twice here.
///
/// `json` escapes in its own way (`JSONText`); `bytes` is the one raw path, for bytes meishi
/// made (a signed card, QR art with its colour codes) or that the person asked for unchanged
/// (`scan --raw`).
struct Console: Sendable {
    let standardOutput: Sink
    let standardError: Sink
    /// The width of the terminal standard error is, if it is one: messages longer than it are
    /// broken at spaces, continuation lines indented, so a terminal never cuts a word.
    var messageWidth: Int? = nil

    /// `prefix` + `message` sanitised, wrapped to `messageWidth`, with a newline.
    private func message(_ prefix: String, _ message: String) -> String {
        let text = prefix + TerminalText.sanitized(message)
        guard let width = messageWidth, width >= 20, DisplayWidth.of(text) > width else { return text + "\n" }
        return DisplayWidth.wrapped(text, to: width, indent: 2).joined(separator: "\n") + "\n"
    }

    /// One line (or several) on standard output, sanitised (line breaks kept).
    func line(_ text: String) {
        standardOutput.write(Array((TerminalText.sanitized(text, keepingNewlines: true) + "\n").utf8))
    }

    /// Bytes on standard output as they are: never peer text unless the person asked for it raw.
    func bytes(_ data: [UInt8]) {
        standardOutput.write(data)
    }

    /// A line break first when a question is still open on the terminal (see `OpenPrompt`).
    private var lineStart: String { OpenPrompt.close() ? "\n" : "" }

    func report(_ failure: MeishiFailure) {
        var text = lineStart + message("meishi: error: ", failure.message)
        if let hint = failure.hint { text += message("meishi: hint: ", hint) }
        standardError.write(Array(text.utf8))
    }

    func warn(_ text: String) {
        standardError.write(Array((lineStart + message("meishi: warning: ", text)).utf8))
    }

    /// A step `--verbose` reports.
    func debug(_ text: String) {
        standardError.write(Array(message("meishi: debug: ", text).utf8))
    }

    /// A line break on standard error: after the terminal echoed ^C, what follows starts a line.
    func endLine() {
        standardError.write([0x0A])
    }

    func note(_ text: String) {
        standardError.write(Array((lineStart + message("meishi: ", text)).utf8))
    }

    /// Writes one JSON document (sorted keys, indented) and a newline to standard output.
    func json(_ value: JSONValue) {
        standardOutput.write(Array((JSONText.pretty(value) + "\n").utf8))
    }

    /// Text from someone else, made safe for the terminal with its newlines escaped too: for a
    /// value inside a multi-line block, where `line` would keep a newline.
    static func safe(_ s: String) -> String { TerminalText.sanitized(s) }
}

/// Indented JSON with sorted keys, escaped like JCS (RFC 8785: `"`, `\\` and C0 controls) and
/// beyond it: DEL, C1 controls, bidi controls, U+2028/9 and the invisible characters of
/// `TerminalText` are written as `\uXXXX` (surrogate pairs above U+FFFF), so the JSON meishi
/// prints holds no character a terminal would act on or hide. The same text still parses to the
/// same strings. Only this printer does it: `JCS.canonicalize`, which signatures cover, stays
/// exactly RFC 8785.
enum JSONText {
    static func pretty(_ v: JSONValue, indent: String = "") -> String {
        let inner = indent + "  "
        switch v {
        case .array(let items):
            if items.isEmpty { return "[]" }
            return "[\n" + items.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let sorted = members.sorted { $0.key < $1.key }
            return "{\n" + sorted.map { inner + string($0.key) + ": " + pretty($0.value, indent: inner) }.joined(separator: ",\n")
                + "\n" + indent + "}"
        case .string(let s):
            return string(s)
        default:
            return String(decoding: JCS.canonicalize(v), as: UTF8.self)
        }
    }

    /// A JSON string literal for `s`: JCS escaping, plus `\uXXXX` for every scalar
    /// `TerminalText.isEscaped` names that JCS would write raw.
    static func string(_ s: String) -> String {
        let jcs = String(decoding: JCS.canonicalize(.string(s)), as: UTF8.self)
        guard jcs.unicodeScalars.contains(where: TerminalText.isEscaped) else { return jcs }
        var out = ""
        for scalar in jcs.unicodeScalars {
            guard TerminalText.isEscaped(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            for unit in String(scalar).utf16 {
                let hex = String(unit, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return out
    }
}
