import Foundation

/// Reading vCards.
extension VCard {
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
