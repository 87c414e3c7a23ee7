import Foundation

/// One parameter of a content line: `TYPE=work,voice` or a vCard 2.1 bare `WORK`.
public struct VCardParameter: Equatable, Sendable {
    /// Uppercased; a vCard 2.1 bare value is a `TYPE`, or an `ENCODING` for `QUOTED-PRINTABLE`,
    /// `BASE64`, `8BIT` and `7BIT`.
    public var name: String
    public var values: [String]

    public init(name: String, values: [String]) {
        self.name = name
        self.values = values
    }
}

/// One content line, unfolded, with its value decoded (quoted-printable, base64 text, charset)
/// but still vCard-escaped (`\,` `\;` `\n`).
public struct VCardProperty: Equatable, Sendable {
    /// `item1` in `item1.EMAIL`.
    public var group: String?
    /// Uppercased.
    public var name: String
    /// As the file spells it (`X-ABLabel`), to write it back the same way.
    public var spelledName: String
    public var parameters: [VCardParameter]
    public var value: String
    /// The line it starts on, counting from 1.
    public var line: Int
    /// A base64 value that is not text (a picture in `X-MS-CARDPICTURE`): `value` is the base64,
    /// without whitespace, and the `ENCODING` parameter is dropped like a text value's.
    public var isBinary = false

    public func parameter(_ name: String) -> [String]? {
        let found = parameters.filter { $0.name == name }
        return found.isEmpty ? nil : found.flatMap(\.values)
    }

    /// The value unescaped: `\n` a newline, `\,` `\;` `\\` the character.
    public var text: String { VCard.unescape(value) }

    /// The value split at unescaped `;`, each part unescaped.
    public var components: [String] { VCard.components(value) }
}

/// One `BEGIN:VCARD` … `END:VCARD`.
public struct ParsedVCard: Equatable, Sendable {
    /// `VERSION`, e.g. "2.1", "3.0", "4.0"; nil when the card names none.
    public var version: String?
    public var properties: [VCardProperty]
    /// The line of `BEGIN:VCARD`.
    public var line: Int
}

/// Something wrong in a vCard file, with the line it was found on.
public struct VCardProblem: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        /// No `BEGIN:VCARD` anywhere (an empty, binary or other file).
        case noCard
        /// `BEGIN:VCARD` without `END:VCARD`; the card is skipped.
        case unterminatedCard
        /// A NUL byte inside a card; the card is skipped.
        case binaryData
        /// A card with more than `VCardParser.maximumProperties` properties; the card is skipped.
        case tooManyProperties(limit: Int)
        /// A logical line longer than the limit; the property is skipped.
        case lineTooLong(limit: Int)
        /// A binary property (PHOTO, LOGO, SOUND, KEY) larger than the limit; it is skipped anyway.
        case binaryTooLarge(property: String, limit: Int)
        /// A line that is not `[group.]NAME[;params]:value`; the property is skipped.
        case malformedLine
        /// `=` not followed by two hex digits in a quoted-printable value (read literally).
        case invalidQuotedPrintable
        /// A CHARSET meishi cannot decode (read as the file's own encoding).
        case unknownCharset(String)
        /// Base64 text that does not decode; the property is skipped.
        case invalidBase64
        /// A card with nothing meishi can store (no name, email, phone or other property); skipped.
        case emptyCard
        /// An `FN` longer than a card value may be: the contact is stored without a name, the
        /// `FN` kept as written (exported again).
        case nameTooLong(limit: Int)
    }

    public let line: Int
    public let reason: Reason
    /// Whether the whole card was skipped (else only one property, or nothing).
    public var skipsCard: Bool {
        switch reason {
        case .noCard, .unterminatedCard, .binaryData, .tooManyProperties, .emptyCard: true
        default: false
        }
    }

    public init(line: Int, reason: Reason) {
        self.line = line
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .noCard: "not a vCard: no BEGIN:VCARD"
        case .unterminatedCard: "card not terminated: no END:VCARD, card skipped"
        case .binaryData: "NUL byte in a card (binary data), card skipped"
        case .tooManyProperties(let n): "more than \(n) properties in one card, card skipped"
        case .lineTooLong(let n): "line longer than \(n) bytes, property skipped"
        case .binaryTooLarge(let p, let n): "\(p) larger than \(n) bytes"
        case .malformedLine: "not a vCard property (NAME:value), line skipped"
        case .invalidQuotedPrintable: "invalid quoted-printable, read literally"
        case .unknownCharset(let c): "unknown CHARSET \"\(c)\", read as the file's encoding"
        case .invalidBase64: "invalid base64, property skipped"
        case .emptyCard: "card holds nothing to import, skipped"
        case .nameTooLong(let n): "name (FN) longer than \(n) bytes: stored without a name, the FN kept as written for export"
        }
    }
}

/// What a vCard file holds: the cards that parsed and what was wrong, in line order.
public struct VCardParseResult: Equatable, Sendable {
    public var cards: [ParsedVCard] = []
    public var problems: [VCardProblem] = []
}

/// Reads vCard 2.1, 3.0 and 4.0 files as address books write them: any line end (CRLF, LF,
/// CR), a BOM, UTF-16, folding with space or tab, quoted-printable with soft line breaks,
/// `CHARSET=` per property and files that are not UTF-8, groups, lowercase names, blank lines.
/// Never traps, and works in time linear in the input.
public enum VCardParser {
    /// Longest logical (unfolded) line of a text property, in bytes.
    public static let maximumLineBytes = 64 * 1024
    /// Largest binary property (PHOTO and the like) read past without complaint; it is skipped either way.
    public static let maximumBinaryBytes = 4 << 20
    /// Most properties in one card.
    public static let maximumProperties = 1000
    /// How deep cards may nest inside cards (Android writes nested cards); a deeper one ends the
    /// card it is in, which is reported as not terminated.
    public static let maximumNesting = 8
    /// Binary properties: skipped, never stored.
    public static let binaryProperties: Set<String> = ["PHOTO", "LOGO", "SOUND", "KEY"]

    enum Charset: Equatable {
        case utf8, shiftJIS, latin1

        init?(name: String) {
            switch name.uppercased() {
            case "UTF-8", "UTF8": self = .utf8
            case "SHIFT_JIS", "SHIFT-JIS", "SJIS", "CP932", "WINDOWS-31J", "MS_KANJI", "X-SJIS": self = .shiftJIS
            case "ISO-8859-1", "ISO8859-1", "LATIN1", "ISO_8859-1", "WINDOWS-1252", "CP1252", "US-ASCII", "ASCII": self = .latin1
            default: return nil
            }
        }

        func decode(_ bytes: [UInt8]) -> String {
            switch self {
            case .utf8:
                return String(decoding: bytes, as: UTF8.self)
            case .shiftJIS:
                if let s = String(data: Data(bytes), encoding: .shiftJIS) { return s }
                return TextDecoding.decode(bytes)
            case .latin1:
                return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
            }
        }
    }

    /// Parses `bytes` (a whole file).
    public static func parse(_ input: [UInt8]) -> VCardParseResult {
        let bytes = normalizedBytes(input)
        let fileCharset: Charset
        if String(validating: bytes, as: UTF8.self) != nil {
            fileCharset = .utf8
        } else if TextDecoding.looksLikeShiftJIS(bytes) {
            fileCharset = .shiftJIS
        } else {
            fileCharset = .latin1
        }
        var result = VCardParseResult()
        var current: ParsedVCard?
        var currentBroken: VCardProblem?
        var nestedDepth = 0
        /// Cards left open by a BEGIN:VCARD inside them (Android writes nested cards without
        /// AGENT): each is a card of its own, and the outer one continues after its END.
        var enclosing: [(card: ParsedVCard, broken: VCardProblem?, slot: Int)] = []
        /// Where the open card goes among the cards read: before the ones nested in it.
        var currentSlot = 0
        var previousWasEmptyAgent = false
        var sawBegin = false

        func finishLogical(_ logical: LogicalLine) {
            if logical.overlong, !logical.isBinary {
                if current != nil, nestedDepth == 0 {
                    result.problems.append(VCardProblem(line: logical.line, reason: .lineTooLong(limit: maximumLineBytes)))
                }
                return
            }
            let trimmedEmpty = logical.bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 }
            if trimmedEmpty { return }
            guard let raw = RawProperty(logical.bytes) else {
                if current != nil, nestedDepth == 0, currentBroken == nil {
                    if logical.bytes.contains(0) {
                        currentBroken = VCardProblem(line: logical.line, reason: .binaryData)
                    } else {
                        result.problems.append(VCardProblem(line: logical.line, reason: .malformedLine))
                    }
                }
                return
            }
            let valueUpper = String(decoding: raw.value.prefix(16), as: UTF8.self).trimmingCharacters(in: .whitespaces).uppercased()
            if raw.name == "BEGIN", valueUpper == "VCARD" {
                sawBegin = true
                if let open = current {
                    if previousWasEmptyAgent || nestedDepth > 0 {
                        nestedDepth += 1
                        return
                    }
                    if enclosing.count < maximumNesting {
                        enclosing.append((open, currentBroken, currentSlot))
                    } else {
                        result.problems.append(VCardProblem(line: open.line, reason: .unterminatedCard))
                    }
                }
                current = ParsedVCard(version: nil, properties: [], line: logical.line)
                currentSlot = result.cards.count
                currentBroken = nil
                previousWasEmptyAgent = false
                return
            }
            guard current != nil else { return }  // text between cards is ignored
            if raw.name == "END", valueUpper == "VCARD" {
                if nestedDepth > 0 { nestedDepth -= 1; return }
                if let broken = currentBroken {
                    result.problems.append(broken)
                } else {
                    result.cards.insert(current!, at: currentSlot)
                }
                // Back to the card this one was nested in, if any.
                let outer = enclosing.popLast()
                current = outer?.card
                currentBroken = outer?.broken
                currentSlot = outer?.slot ?? result.cards.count
                previousWasEmptyAgent = false
                return
            }
            guard nestedDepth == 0, currentBroken == nil else { return }
            if raw.value.contains(0) || raw.head.contains(0) {
                currentBroken = VCardProblem(line: logical.line, reason: .binaryData)
                return
            }
            if current!.properties.count >= maximumProperties {
                currentBroken = VCardProblem(line: logical.line, reason: .tooManyProperties(limit: maximumProperties))
                return
            }
            previousWasEmptyAgent = raw.name == "AGENT" && raw.value.allSatisfy { $0 == 0x20 || $0 == 0x09 }
            if binaryProperties.contains(raw.name) {
                if logical.overlong {
                    result.problems.append(VCardProblem(line: logical.line,
                                                        reason: .binaryTooLarge(property: raw.name, limit: maximumBinaryBytes)))
                }
                // Photos and keys are skipped: only that there was one is kept, by the caller's choice.
                current!.properties.append(VCardProperty(group: raw.group, name: raw.name, spelledName: raw.spelledName,
                                                         parameters: raw.parameters, value: "", line: logical.line))
                return
            }
            var problems: [VCardProblem.Reason] = []
            var isBinary = false
            guard let value = decodeValue(raw, fileCharset: fileCharset, problems: &problems, binary: &isBinary) else {
                for p in problems { result.problems.append(VCardProblem(line: logical.line, reason: p)) }
                return
            }
            for p in problems { result.problems.append(VCardProblem(line: logical.line, reason: p)) }
            if raw.name == "VERSION" { current!.version = value.trimmingCharacters(in: .whitespaces) }
            current!.properties.append(VCardProperty(group: raw.group, name: raw.name, spelledName: raw.spelledName,
                                                     parameters: raw.parameters.filter { $0.name != "ENCODING" && $0.name != "CHARSET" },
                                                     value: value, line: logical.line, isBinary: isBinary))
        }

        var logical: LogicalLine?
        var lineNumber = 0
        var i = 0
        let n = bytes.count
        while i < n {
            // One physical line: [i, end), then skip CRLF, LF or CR.
            var end = i
            while end < n, bytes[end] != 0x0A, bytes[end] != 0x0D { end += 1 }
            lineNumber += 1
            let physical = bytes[i..<end]
            if end < n, bytes[end] == 0x0D, end + 1 < n, bytes[end + 1] == 0x0A { i = end + 2 } else { i = end + 1 }

            if var l = logical, let first = physical.first, first == 0x20 || first == 0x09 {
                l.append(physical.dropFirst())  // folded: the continuation minus one space or tab
                logical = l
                continue
            }
            if var l = logical, l.softBreakPending {
                l.append(physical)  // quoted-printable soft line break (vCard 2.1)
                logical = l
                continue
            }
            // A blank line (iOS writes CR CR LF) neither ends a property nor takes continuations.
            if physical.isEmpty { continue }
            if let l = logical { finishLogical(l) }
            var l = LogicalLine(line: lineNumber)
            l.append(physical)
            logical = l
        }
        if let l = logical { finishLogical(l) }
        for c in enclosing.map(\.card) + (current.map { [$0] } ?? []) {
            result.problems.append(VCardProblem(line: c.line, reason: .unterminatedCard))
        }
        if !sawBegin { result.problems.append(VCardProblem(line: 1, reason: .noCard)) }
        result.problems.sort { $0.line < $1.line }
        return result
    }

    /// Without a UTF-8 BOM; UTF-16 (with a BOM) converted to UTF-8.
    static func normalizedBytes(_ input: [UInt8]) -> [UInt8] {
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { return Array(input.dropFirst(3)) }
        if input.starts(with: [0xFF, 0xFE]) || input.starts(with: [0xFE, 0xFF]) {
            let little = input[0] == 0xFF
            var units: [UInt16] = []
            units.reserveCapacity(input.count / 2)
            var i = 2
            while i + 1 < input.count {
                units.append(little ? UInt16(input[i]) | UInt16(input[i + 1]) << 8 : UInt16(input[i]) << 8 | UInt16(input[i + 1]))
                i += 2
            }
            return Array(String(decoding: units, as: UTF16.self).utf8)
        }
        return input
    }

    /// Whether a line starts a binary property, whose long lines are expected.
    static func isBinaryHead(_ head: [UInt8]) -> Bool {
        guard let raw = RawProperty(head + [0x3A]) else { return false }
        return binaryProperties.contains(raw.name)
    }

    /// A line after unfolding. Stops keeping bytes past the limit (binary properties may be
    /// longer) but still swallows its continuation lines.
    struct LogicalLine {
        let line: Int
        var bytes: [UInt8] = []
        var overlong = false
        /// Quoted-printable and ending in `=`: the next physical line continues it.
        var softBreakPending = false
        var isQuotedPrintable: Bool?

        init(line: Int) { self.line = line }

        /// PHOTO, LOGO, SOUND or KEY: its value is never used, so only its size is counted.
        var isBinary = false
        var binaryBytes = 0

        mutating func append(_ part: ArraySlice<UInt8>) {
            if isBinary {
                binaryBytes += part.count
                overlong = overlong || binaryBytes > VCardParser.maximumBinaryBytes
            } else if !overlong {
                if bytes.count + part.count > VCardParser.maximumLineBytes {
                    overlong = true
                    bytes.append(contentsOf: part.prefix(max(0, 256 - bytes.count)))
                } else {
                    bytes.append(contentsOf: part)
                }
            }
            if isQuotedPrintable == nil, bytes.count > 4096 {
                isQuotedPrintable = false  // no name and parameters that long: not a property anyway
            }
            if isQuotedPrintable == nil, let colon = VCardParser.headEnd(bytes) {
                let head = bytes[..<colon]
                isQuotedPrintable = String(decoding: head, as: UTF8.self).uppercased().contains("QUOTED-PRINTABLE")
                if VCardParser.isBinaryHead(Array(head)) {
                    isBinary = true
                    binaryBytes = bytes.count - colon - 1
                    bytes.removeSubrange((colon + 1)...)
                    overlong = binaryBytes > VCardParser.maximumBinaryBytes
                }
            }
            softBreakPending = isQuotedPrintable == true && part.last == 0x3D && !overlong
            if softBreakPending, !isBinary { bytes.removeLast() }
        }
    }

    /// The index of the `:` that ends the name and parameters (quotes respected), if any.
    static func headEnd<C: Collection>(_ bytes: C) -> C.Index? where C.Element == UInt8 {
        var inQuotes = false
        var i = bytes.startIndex
        while i != bytes.endIndex {
            let b = bytes[i]
            if b == 0x22 { inQuotes.toggle() } else if b == 0x3A, !inQuotes { return i }
            i = bytes.index(after: i)
        }
        return nil
    }

    /// `[group.]NAME[;params]:value`, split but not decoded.
    struct RawProperty {
        var group: String?
        var name: String
        var spelledName: String
        var parameters: [VCardParameter]
        var head: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>

        init?(_ bytes: [UInt8]) {
            guard let colon = VCardParser.headEnd(bytes) else { return nil }
            head = bytes[..<colon]
            value = bytes[(colon + 1)...]
            // NAME (letters, digits, '-') and an optional group before a '.'.
            var nameEnd = head.startIndex
            while nameEnd < head.endIndex, head[nameEnd] != 0x3B { nameEnd += 1 }
            var fullName = String(decoding: head[..<nameEnd], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            if let dot = fullName.lastIndex(of: ".") {
                let g = String(fullName[..<dot])
                guard !g.isEmpty, g.utf8.allSatisfy(Self.isNameByte) else { return nil }
                group = g
                fullName = String(fullName[fullName.index(after: dot)...])
            }
            guard !fullName.isEmpty, fullName.utf8.count <= 128, fullName.utf8.allSatisfy(Self.isNameByte) else { return nil }
            name = fullName.uppercased()
            spelledName = fullName
            parameters = []
            guard nameEnd < head.endIndex else { return }
            for param in Self.splitParameters(head[(nameEnd + 1)...]) where !param.isEmpty {
                let text = String(decoding: param, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                if let eq = text.firstIndex(of: "=") {
                    let pname = text[..<eq].trimmingCharacters(in: .whitespaces).uppercased()
                    let pvalue = String(text[text.index(after: eq)...])
                    parameters.append(VCardParameter(name: pname, values: Self.splitParameterValues(pvalue)))
                } else {
                    let upper = text.uppercased()
                    if ["QUOTED-PRINTABLE", "BASE64", "B", "8BIT", "7BIT"].contains(upper) {
                        parameters.append(VCardParameter(name: "ENCODING", values: [upper]))
                    } else {
                        parameters.append(VCardParameter(name: "TYPE", values: [text]))
                    }
                }
            }
        }

        static func isNameByte(_ b: UInt8) -> Bool {
            (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || (0x30...0x39).contains(b) || b == 0x2D || b == 0x5F
        }

        static func splitParameters(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
            var out: [ArraySlice<UInt8>] = []
            var inQuotes = false
            var start = bytes.startIndex
            for i in bytes.indices {
                if bytes[i] == 0x22 { inQuotes.toggle() } else if bytes[i] == 0x3B, !inQuotes {
                    out.append(bytes[start..<i])
                    start = i + 1
                }
            }
            out.append(bytes[start...])
            return out
        }

        /// `a,b` or `"a,b",c` into values, quotes removed, RFC 6868 `^n ^' ^^` decoded.
        static func splitParameterValues(_ s: String) -> [String] {
            var out: [String] = []
            var current = ""
            var inQuotes = false
            var caret = false
            for ch in s {
                if caret {
                    switch ch {
                    case "n": current.append("\n")
                    case "'": current.append("\"")
                    case "^": current.append("^")
                    default: current.append("^"); current.append(ch)
                    }
                    caret = false
                    continue
                }
                switch ch {
                case "\"": inQuotes.toggle()
                case "^": caret = true
                case "," where !inQuotes:
                    out.append(current)
                    current = ""
                default: current.append(ch)
                }
            }
            if caret { current.append("^") }
            out.append(current)
            return out
        }
    }

    /// The value as text: quoted-printable or base64 undone, then the charset applied. Base64
    /// that is not text (not UTF-8, or holding control characters other than line breaks and
    /// tabs) stays base64, and `binary` says so.
    static func decodeValue(_ raw: RawProperty, fileCharset: Charset, problems: inout [VCardProblem.Reason], binary: inout Bool) -> String? {
        let encoding = raw.parameters.last { $0.name == "ENCODING" }?.values.first?.uppercased()
        var bytes: [UInt8]
        switch encoding {
        case "QUOTED-PRINTABLE":
            var bad = false
            bytes = quotedPrintable(raw.value, invalid: &bad)
            if bad { problems.append(.invalidQuotedPrintable) }
        case "B", "BASE64":
            let text = String(decoding: raw.value.filter { $0 != 0x20 && $0 != 0x09 }, as: UTF8.self)
            guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else {
                problems.append(.invalidBase64)
                return nil
            }
            bytes = Array(data)
        default:
            bytes = Array(raw.value)
        }
        var charset = fileCharset
        if let name = raw.parameters.last(where: { $0.name == "CHARSET" })?.values.first {
            if let c = Charset(name: name) { charset = c } else { problems.append(.unknownCharset(name)) }
        }
        // A UTF-8 file whose quoted-printable bytes are not UTF-8 (and no CHARSET): guess per value.
        let text = charset == .utf8 && String(validating: bytes, as: UTF8.self) == nil ? TextDecoding.decode(bytes) : charset.decode(bytes)
        if encoding == "B" || encoding == "BASE64", text.unicodeScalars.contains(where: { VCard.isControl($0) && $0 != "\r" && $0 != "\n" }) {
            binary = true
            return Data(bytes).base64EncodedString()
        }
        return text
    }

    /// Decodes quoted-printable; an `=` not followed by two hex digits is kept literally.
    static func quotedPrintable(_ value: ArraySlice<UInt8>, invalid: inout Bool) -> [UInt8] {
        func hex(_ b: UInt8) -> UInt8? {
            switch b {
            case 0x30...0x39: b - 0x30
            case 0x41...0x46: b - 0x41 + 10
            case 0x61...0x66: b - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(value.count)
        var i = value.startIndex
        while i < value.endIndex {
            let b = value[i]
            if b == 0x3D {
                if i + 2 < value.endIndex, let h = hex(value[i + 1]), let l = hex(value[i + 2]) {
                    out.append(h << 4 | l)
                    i += 3
                    continue
                }
                invalid = true
            }
            out.append(b)
            i += 1
        }
        return out
    }
}

extension VCard {
    /// A control character (C0 but tab, DEL, C1): no vCard value may hold one, and a base64
    /// value holding one is binary. Line breaks are controls too; callers that allow them say so.
    static func isControl(_ s: Unicode.Scalar) -> Bool {
        (s.value < 0x20 && s != "\t") || (0x7F...0x9F).contains(s.value)
    }

    /// `\n` `\N` as a newline, `\,` `\;` `\\` (and any other escaped character) as the character.
    public static func unescape(_ s: String) -> String {
        guard s.contains("\\") else { return s }
        return unescaped(s, splittingAt: nil)[0]
    }

    /// Split at unescaped `;`, each part unescaped.
    public static func components(_ s: String) -> [String] { unescaped(s, splittingAt: ";") }

    /// `s` unescaped as `unescape` does, split at each unescaped `separator` when given.
    static func unescaped(_ s: String, splittingAt separator: Character?) -> [String] {
        var parts: [String] = []
        var current = ""
        var escaped = false
        for ch in s {
            if escaped {
                current.append(ch == "n" || ch == "N" ? "\n" : ch)
                escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == separator {
                parts.append(current)
                current = ""
            } else {
                current.append(ch)
            }
        }
        if escaped, separator == nil { current.append("\\") }
        parts.append(current)
        return parts
    }
}
