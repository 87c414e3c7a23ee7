import MeishiCard

/// Everything commands print goes through here: results on standard output; errors, warnings
/// and notes on standard error. Text from other people passes `safe` on its way out.
struct Console: Sendable {
    let standardOutput: Sink
    let standardError: Sink

    /// One line (or several) on standard output.
    func line(_ text: String) {
        standardOutput.write(Array((text + "\n").utf8))
    }

    /// Bytes on standard output as they are.
    func bytes(_ data: [UInt8]) {
        standardOutput.write(data)
    }

    func report(_ failure: MeishiFailure) {
        var text = "meishi: error: \(failure.message)\n"
        if let hint = failure.hint { text += "meishi: hint: \(hint)\n" }
        standardError.write(Array(text.utf8))
    }

    func warn(_ message: String) {
        standardError.write(Array("meishi: warning: \(message)\n".utf8))
    }

    func note(_ message: String) {
        standardError.write(Array("meishi: \(message)\n".utf8))
    }

    /// Writes one JSON document (sorted keys, indented) and a newline to standard output.
    func json(_ value: JSONValue) {
        standardOutput.write(Array((JSONText.pretty(value) + "\n").utf8))
    }

    /// Text from someone else, made safe for the terminal.
    static func safe(_ s: String) -> String { TerminalText.sanitized(s) }
}

/// Indented JSON with sorted keys and JCS escaping: one document per command.
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
            return "{\n" + sorted.map { inner + String(decoding: JCS.canonicalize(.string($0.key)), as: UTF8.self) + ": "
                + pretty($0.value, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
        default:
            return String(decoding: JCS.canonicalize(v), as: UTF8.self)
        }
    }
}
