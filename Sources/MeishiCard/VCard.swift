import Foundation

/// Contact data read from a vCard (2.1, 3.0, 4.0) or a MECARD, mapped to meishi field names.
public struct ImportedContact: Equatable, Sendable {
    public var fields: [String: [String]] = [:]
    /// The `X-MEISHI-DID` property, when it holds an Ed25519 did:key.
    public var did: String?
    /// `REV` as Unix seconds, when present and parseable.
    public var revision: Int64?
    /// "vCard 4.0", "vCard 2.1", "MECARD".
    public var format: String

    public var name: String? { fields["name"]?.first }

    mutating func add(_ field: String, _ value: String) {
        let v = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !v.isEmpty, v.utf8.count <= Card.maximumValueBytes else { return }
        if FieldName.multiValued.contains(field) {
            if !(fields[field] ?? []).contains(v) { fields[field, default: []].append(v) }
        } else if fields[field] == nil {
            fields[field] = [v]
        }
    }
}

/// Writing and reading vCards.
public enum VCard {
    /// A vCard 4.0 (RFC 6350) of the given fields, with the DID in `X-MEISHI-DID` so meishi can
    /// recognise it. CRLF line ends; lines folded at 75 octets without splitting a character.
    public static func make(fields: [(name: String, values: [String])], did: String, timestamp: Int64) -> String {
        var lines = ["BEGIN:VCARD", "VERSION:4.0"]
        for f in fields {
            for v in f.values {
                switch f.name {
                case "name":
                    lines.append("FN:" + escape(v))
                    lines.append("N:;" + escape(v) + ";;;")
                case "title": lines.append("TITLE:" + escape(v))
                case "org": lines.append("ORG:" + escape(v))
                case "email": lines.append("EMAIL:" + escape(v))
                case "phone": lines.append("TEL;VALUE=text:" + escape(v))
                case "url": lines.append("URL:" + escape(v))
                case "address": lines.append("ADR;LABEL=\"" + v.replacingOccurrences(of: "\"", with: "'") + "\":;;" + escape(v) + ";;;;")
                case "note": lines.append("NOTE:" + escape(v))
                default: lines.append("X-MEISHI-" + f.name.dropFirst(2).uppercased() + ":" + escape(v))
                }
            }
        }
        lines.append("X-MEISHI-DID:" + did)
        lines.append("REV:" + revision(timestamp))
        lines.append("END:VCARD")
        return lines.map(fold).joined(separator: "\r\n") + "\r\n"
    }

    static func revision(_ t: Int64) -> String {
        // yyyyMMddTHHmmssZ from the RFC 3339 form.
        UTCTime.rfc3339(t).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "\\": out += "\\\\"
            case ",": out += "\\,"
            case ";": out += "\\;"
            case "\n", "\r\n": out += "\\n"
            default: out.append(ch)
            }
        }
        return out
    }

    static func fold(_ line: String) -> String {
        guard line.utf8.count > 75 else { return line }
        var out = ""
        var width = 0
        for ch in line {
            let n = String(ch).utf8.count
            if width + n > 75 {
                out += "\r\n "
                width = 1
            }
            out.append(ch)
            width += n
        }
        return out
    }

    // MARK: Reading

    /// The first vCard in `text`, or nil when there is none.
    public static func parse(_ text: String) -> ImportedContact? {
        var lines = unfold(text)
        guard let begin = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces).uppercased() == "BEGIN:VCARD" }) else { return nil }
        lines.removeFirst(begin + 1)
        var contact = ImportedContact(format: "vCard")
        var nameFromN: String?
        var depth = 0
        for line in lines {
            guard let prop = Property(line) else { continue }
            if prop.name == "BEGIN", prop.rawValue.uppercased() == "VCARD" { depth += 1; continue }
            if prop.name == "END", prop.rawValue.uppercased() == "VCARD" {
                if depth == 0 { break }
                depth -= 1
                continue
            }
            guard depth == 0 else { continue }
            if prop.isBinary { continue }
            switch prop.name {
            case "VERSION": contact.format = "vCard " + prop.rawValue.trimmingCharacters(in: .whitespaces)
            case "FN": contact.add("name", prop.text)
            case "N":
                let c = prop.components
                let parts = [c[safe: 3], c[safe: 1], c[safe: 2], c[safe: 0], c[safe: 4]].compactMap { $0 }.filter { !$0.isEmpty }
                if !parts.isEmpty { nameFromN = parts.joined(separator: " ") }
            case "ORG": contact.add("org", prop.components.filter { !$0.isEmpty }.joined(separator: ", "))
            case "TITLE": contact.add("title", prop.text)
            case "EMAIL": contact.add("email", prop.text)
            case "TEL":
                var t = prop.text
                if t.lowercased().hasPrefix("tel:") { t = String(t.dropFirst(4)) }
                contact.add("phone", t)
            case "URL": contact.add("url", prop.text)
            case "ADR": contact.add("address", prop.components.filter { !$0.isEmpty }.joined(separator: ", "))
            case "NOTE": contact.add("note", prop.text)
            case "REV": contact.revision = parseRevision(prop.text)
            case "X-MEISHI-DID":
                let d = prop.text.trimmingCharacters(in: .whitespaces)
                if DIDKey.ed25519PublicKey(from: d) != nil { contact.did = d }
            default:
                if prop.name.hasPrefix("X-MEISHI-"), let f = try? FieldName("x-" + prop.name.dropFirst(9).lowercased()) {
                    contact.add(f.rawValue, prop.text)
                }
            }
        }
        if contact.fields["name"] == nil, let n = nameFromN { contact.add("name", n) }
        return contact.fields.isEmpty && contact.did == nil ? nil : contact
    }

    /// A MECARD (`MECARD:N:Tanaka,Mei;TEL:…;;`), as phones and older apps write.
    public static func parseMECARD(_ text: String) -> ImportedContact? {
        guard text.uppercased().hasPrefix("MECARD:") else { return nil }
        var contact = ImportedContact(format: "MECARD")
        var fields: [(String, String)] = []
        var key = "", value = "", inValue = false, escaped = false
        for ch in text.dropFirst(7) {
            if escaped { value.append(ch); escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if !inValue {
                if ch == ":" { inValue = true } else if ch != ";" { key.append(ch) }
                continue
            }
            if ch == ";" {
                fields.append((key.uppercased(), value))
                key = ""; value = ""; inValue = false
                continue
            }
            value.append(ch)
        }
        if inValue { fields.append((key.uppercased(), value)) }
        for (k, v) in fields {
            switch k {
            case "N":
                let parts = v.split(separator: ",", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
                contact.add("name", parts.count == 2 ? parts[1] + " " + parts[0] : parts.joined(separator: " "))
            case "TEL": contact.add("phone", v)
            case "EMAIL": contact.add("email", v)
            case "URL": contact.add("url", v)
            case "ADR": contact.add("address", v)
            case "NOTE", "MEMO": contact.add("note", v)
            case "ORG": contact.add("org", v)
            case "TITLE": contact.add("title", v)
            default: break
            }
        }
        return contact.fields.isEmpty ? nil : contact
    }

    static func parseRevision(_ s: String) -> Int64? {
        let digits = s.filter { $0.isNumber }
        guard digits.count >= 8 else { return nil }
        var c = DateComponents()
        let d = Array(digits)
        c.year = Int(String(d[0..<4])); c.month = Int(String(d[4..<6])); c.day = Int(String(d[6..<8]))
        if d.count >= 14 { c.hour = Int(String(d[8..<10])); c.minute = Int(String(d[10..<12])); c.second = Int(String(d[12..<14])) }
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        return cal.date(from: c).map { Int64($0.timeIntervalSince1970) }
    }

    /// Lines with RFC folding (CRLF + space/tab) and quoted-printable soft breaks (`=` at the end) joined.
    static func unfold(_ text: String) -> [String] {
        let raw = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        var out: [String] = []
        var qpContinuation = false
        for line in raw {
            if qpContinuation, !out.isEmpty {
                out[out.count - 1] += line
            } else if let first = line.first, first == " " || first == "\t", !out.isEmpty {
                out[out.count - 1] += line.dropFirst()
            } else {
                out.append(String(line))
            }
            let current = out.last ?? ""
            qpContinuation = current.uppercased().contains("QUOTED-PRINTABLE") && current.hasSuffix("=")
            if qpContinuation { out[out.count - 1].removeLast() }
        }
        return out
    }

    /// One content line: `[group.]NAME[;param…]:value`.
    struct Property {
        let name: String
        let params: [String: String]
        let rawValue: String

        init?(_ line: String) {
            var inQuotes = false
            var colon: String.Index?
            for i in line.indices {
                if line[i] == "\"" { inQuotes.toggle() }
                if line[i] == ":" && !inQuotes { colon = i; break }
            }
            guard let colon else { return nil }
            var head = line[..<colon].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            guard !head.isEmpty else { return nil }
            var n = head.removeFirst().uppercased()
            if let dot = n.lastIndex(of: ".") { n = String(n[n.index(after: dot)...]) }
            name = n.trimmingCharacters(in: .whitespaces)
            var p: [String: String] = [:]
            for param in head {
                let kv = param.split(separator: "=", maxSplits: 1).map(String.init)
                if kv.count == 2 {
                    p[kv[0].uppercased()] = kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                } else if ["QUOTED-PRINTABLE", "BASE64", "B"].contains(param.uppercased()) {
                    p["ENCODING"] = param
                } else if param.uppercased().hasPrefix("CHARSET") == false {
                    p["TYPE", default: ""] += (p["TYPE"] == nil ? "" : ",") + param
                }
            }
            params = p
            rawValue = String(line[line.index(after: colon)...])
        }

        var isBinary: Bool {
            let e = (params["ENCODING"] ?? "").uppercased()
            return e == "B" || e == "BASE64" || ["PHOTO", "LOGO", "SOUND", "KEY"].contains(name)
        }

        var isQuotedPrintable: Bool { (params["ENCODING"] ?? "").uppercased() == "QUOTED-PRINTABLE" }

        /// The value decoded (quoted-printable, charset) but not yet split or unescaped.
        var decoded: String {
            guard isQuotedPrintable else { return rawValue }
            var bytes: [UInt8] = []
            let chars = Array(rawValue.utf8)
            var i = 0
            while i < chars.count {
                if chars[i] == UInt8(ascii: "="), i + 2 < chars.count, let b = Hex.decode(String(decoding: chars[i + 1...i + 2], as: UTF8.self)) {
                    bytes += b
                    i += 3
                } else {
                    bytes.append(chars[i])
                    i += 1
                }
            }
            return TextDecoding.decode(bytes, charset: params["CHARSET"])
        }

        /// Split on unescaped `;` and unescape each component.
        var components: [String] {
            var parts: [String] = []
            var current = ""
            var escaped = false
            for ch in decoded {
                if escaped { current.append(Self.unescaped(ch)); escaped = false; continue }
                if ch == "\\" { escaped = true; continue }
                if ch == ";" { parts.append(current); current = ""; continue }
                current.append(ch)
            }
            parts.append(current)
            return parts
        }

        var text: String {
            var out = ""
            var escaped = false
            for ch in decoded {
                if escaped { out.append(Self.unescaped(ch)); escaped = false; continue }
                if ch == "\\" { escaped = true; continue }
                out.append(ch)
            }
            return out
        }

        static func unescaped(_ ch: Character) -> Character {
            ch == "n" || ch == "N" ? "\n" : ch
        }
    }
}

/// Turning bytes from a QR code or a file into text.
public enum TextDecoding {
    /// UTF-8 when the bytes are valid UTF-8, else Shift_JIS when they decode as such, else Latin-1.
    public static func decode(_ bytes: [UInt8], charset: String? = nil) -> String {
        if let cs = charset?.uppercased() {
            if cs.contains("SHIFT") || cs == "SJIS" || cs == "CP932", let s = String(data: Data(bytes), encoding: .shiftJIS) { return s }
            if cs.contains("8859-1") || cs == "LATIN1" { return String(bytes.map { Character(Unicode.Scalar($0)) }) }
        }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        if looksLikeShiftJIS(bytes), let s = String(data: Data(bytes), encoding: .shiftJIS) { return s }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// Whether the bytes should be read as Shift_JIS rather than Latin-1: well-formed Shift_JIS
    /// with at least one double-byte character, or a run of three half-width katakana. Latin-1
    /// text such as "Köln" is often well-formed Shift_JIS too, but only by accident (zxing's rule).
    public static func looksLikeShiftJIS(_ bytes: [UInt8]) -> Bool {
        var i = 0, doubleBytes = 0, run = 0, longestRun = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x00..<0x80:
                run = 0
                i += 1
            case 0xA1...0xDF:
                run += 1
                longestRun = max(longestRun, run)
                i += 1
            case 0x81...0x9F, 0xE0...0xEF:
                guard i + 1 < bytes.count, (0x40...0xFC).contains(bytes[i + 1]), bytes[i + 1] != 0x7F else { return false }
                doubleBytes += 1
                run = 0
                i += 2
            default:
                return false
            }
        }
        return doubleBytes > 0 || longestRun >= 3
    }

    /// What `scan --raw` prints for a code: its text when the bytes are UTF-8 or Shift_JIS, else
    /// the bytes unchanged (binary content).
    public static func rawOutput(_ bytes: [UInt8]) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        if looksLikeShiftJIS(bytes), let s = String(data: Data(bytes), encoding: .shiftJIS) { return Array(s.utf8) }
        return bytes
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { i >= 0 && i < count ? self[i] : nil }
}
