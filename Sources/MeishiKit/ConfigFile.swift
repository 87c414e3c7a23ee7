/// meishi's configuration file (`$XDG_CONFIG_HOME/meishi/config`): a subset of TOML, so a file
/// written for it stays valid TOML. One `key = value` a line; `#` starts a comment outside a
/// string; blank lines are skipped. A key is bare (`A-Z a-z 0-9 - _`); a value is a basic string
/// (`"…"`, with TOML's escapes `\" \\ \b \t \n \f \r \uXXXX \UXXXXXXXX`), a literal string
/// (`'…'`, no escapes), a decimal integer (`_` between digits allowed), `true` or `false`, or an
/// array of strings on one line (`["name", "email"]`). Tables, dotted keys, a key given twice
/// and anything else TOML has are refused with the line. What the keys mean is the CLI's business.
public struct ConfigFile: Sendable, Equatable {
    /// One value as written.
    public enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case boolean(Bool)
        case strings([String])
    }

    /// One `key = value` line, with its number (from 1).
    public struct Entry: Sendable, Equatable {
        public let key: String
        public let value: Value
        public let line: Int

        public init(key: String, value: Value, line: Int) {
            self.key = key
            self.value = value
            self.line = line
        }
    }

    /// Why a line is not read, with its number (from 1).
    public struct SyntaxError: Error, Sendable, Equatable {
        public let line: Int
        public let reason: String
    }

    /// The entries in the order of the file.
    public let entries: [Entry]

    /// Reads a file's text; throws the first line that is not a `key = value` of the subset.
    public init(parsing text: String) throws(SyntaxError) {
        var entries: [Entry] = []
        var seen: [String: Int] = [:]
        // TOML allows LF and CRLF line ends (one Character in Swift); a lone CR is not a line end.
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, line) in lines.enumerated() {
            let number = index + 1
            var scanner = LineScanner(line, number: number)
            scanner.skipBlanks()
            if scanner.atEndOrComment { continue }
            if scanner.peek == "[" {
                throw SyntaxError(line: number, reason: "tables ([section]) are not read: write key = value lines only")
            }
            let key = try scanner.bareKey()
            scanner.skipBlanks()
            if scanner.peek == "." { throw SyntaxError(line: number, reason: "dotted keys are not read: '\(key).…'") }
            guard scanner.take("=") else { throw SyntaxError(line: number, reason: "expected '=' after '\(key)'") }
            scanner.skipBlanks()
            let value = try scanner.value()
            scanner.skipBlanks()
            guard scanner.atEndOrComment else {
                throw SyntaxError(line: number, reason: "unexpected text after the value of '\(key)'")
            }
            if let first = seen[key] { throw SyntaxError(line: number, reason: "'\(key)' is already set on line \(first)") }
            seen[key] = number
            entries.append(Entry(key: key, value: value, line: number))
        }
        self.entries = entries
    }
}

/// Reads one line of a configuration file left to right.
private struct LineScanner {
    private let characters: [Character]
    private var index = 0
    private let number: Int

    init(_ line: Substring, number: Int) {
        characters = Array(line)
        self.number = number
    }

    var peek: Character? { index < characters.count ? characters[index] : nil }
    var atEndOrComment: Bool { peek == nil || peek == "#" }

    mutating func skipBlanks() {
        while peek == " " || peek == "\t" { index += 1 }
    }

    mutating func take(_ c: Character) -> Bool {
        guard peek == c else { return false }
        index += 1
        return true
    }

    private func fail(_ reason: String) -> ConfigFile.SyntaxError { .init(line: number, reason: reason) }

    mutating func bareKey() throws(ConfigFile.SyntaxError) -> String {
        var key = ""
        while let c = peek, c.isASCII, c.isLetter || c.isNumber || c == "-" || c == "_" {
            key.append(c)
            index += 1
        }
        if key.isEmpty {
            if peek == "\"" || peek == "'" { throw fail("quoted keys are not read: write the key bare") }
            throw fail("expected a key (letters, digits, - and _)")
        }
        return key
    }

    mutating func value() throws(ConfigFile.SyntaxError) -> ConfigFile.Value {
        switch peek {
        case "\""?: return .string(try basicString())
        case "'"?: return .string(try literalString())
        case "["?: return .strings(try stringArray())
        case nil, "#"?: throw fail("a value is missing after '='")
        default: break
        }
        var word = ""
        while let c = peek, c != " ", c != "\t", c != "#" {
            word.append(c)
            index += 1
        }
        if word == "true" { return .boolean(true) }
        if word == "false" { return .boolean(false) }
        if let n = Self.integer(word) { return .integer(n) }
        throw fail("'\(word)' is not a value: put text in double quotes (\"\(word)\")")
    }

    /// A TOML decimal integer: optional sign, digits, single underscores between digits, no
    /// leading zero.
    private static func integer(_ word: String) -> Int? {
        var digits = Substring(word)
        if digits.first == "+" || digits.first == "-" { digits = digits.dropFirst() }
        guard let first = digits.first, first.isASCII, first.isNumber, digits.last?.isNumber == true,
              !digits.contains("__"), !(first == "0" && digits.count > 1),
              digits.allSatisfy({ $0 == "_" || ($0.isASCII && $0.isNumber) }) else { return nil }
        return Int(word.replacingOccurrences(of: "_", with: ""))
    }

    private mutating func basicString() throws(ConfigFile.SyntaxError) -> String {
        index += 1
        var text = ""
        while let c = peek {
            index += 1
            switch c {
            case "\"":
                return text
            case "\\":
                guard let e = peek else { throw fail("a string ends in the middle of an escape") }
                index += 1
                switch e {
                case "\"": text.append("\"")
                case "\\": text.append("\\")
                case "b": text.append("\u{8}")
                case "t": text.append("\t")
                case "n": text.append("\n")
                case "f": text.append("\u{c}")
                case "r": text.append("\r")
                case "u": text.unicodeScalars.append(try hexScalar(4))
                case "U": text.unicodeScalars.append(try hexScalar(8))
                default: throw fail("unknown escape '\\\(e)' in a string")
                }
            default:
                if let scalar = c.unicodeScalars.first, c.unicodeScalars.count == 1, scalar.value < 0x20 && scalar != "\t" || scalar.value == 0x7f {
                    throw fail("a control character in a string: write it as an escape")
                }
                text.append(c)
            }
        }
        throw fail("a string is not closed: a '\"' is missing")
    }

    private mutating func hexScalar(_ count: Int) throws(ConfigFile.SyntaxError) -> Unicode.Scalar {
        guard index + count <= characters.count else { throw fail("a \\u escape needs \(count) hexadecimal digits") }
        let hex = String(characters[index..<index + count])
        index += count
        guard hex.allSatisfy(\.isHexDigit), let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
            throw fail("'\\u\(hex)' is not a Unicode scalar value")
        }
        return scalar
    }

    private mutating func literalString() throws(ConfigFile.SyntaxError) -> String {
        index += 1
        var text = ""
        while let c = peek {
            index += 1
            if c == "'" { return text }
            text.append(c)
        }
        throw fail("a string is not closed: a \"'\" is missing")
    }

    private mutating func stringArray() throws(ConfigFile.SyntaxError) -> [String] {
        index += 1
        var items: [String] = []
        while true {
            skipBlanks()
            if take("]") { return items }
            switch peek {
            case "\""?: items.append(try basicString())
            case "'"?: items.append(try literalString())
            case nil: throw fail("an array is not closed: a ']' is missing (arrays stay on one line)")
            default: throw fail("an array here holds strings only")
            }
            skipBlanks()
            if take(",") { continue }
            if peek == nil { throw fail("an array is not closed: a ']' is missing (arrays stay on one line)") }
            guard take("]") else { throw fail("expected ',' or ']' in an array") }
            return items
        }
    }
}
