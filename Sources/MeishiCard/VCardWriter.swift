import Foundation

/// Writing vCards.
extension VCard {
    /// A vCard 4.0 (RFC 6350) of the given fields, with the DID as `UID` and in `X-MEISHI-DID` so
    /// meishi can recognise it (the `card qr --vcard` form). Written by `write`.
    public static func make(fields: [FieldName: [String]], did: String, timestamp: Int64) -> String {
        write(VCardEntry(uid: did, fields: fields, did: did, trust: nil, revision: timestamp), version: .v4)
    }

    static func revision(_ t: Int64) -> String {
        // yyyyMMddTHHmmssZ from the RFC 3339 form.
        UTCTime.rfc3339(t).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }

    /// `s` as a text value: `\` `,` `;` escaped, each line break (CRLF, LF or CR) as `\n`, and
    /// other control characters (see `isControl`) left out.
    static func escape(_ s: String) -> String {
        var out = ""
        for ch in s {
            switch ch {
            case "\\": out += "\\\\"
            case ",": out += "\\,"
            case ";": out += "\\;"
            case "\n", "\r\n", "\r": out += "\\n"
            default: if !ch.unicodeScalars.contains(where: isControl) { out.append(ch) }
            }
        }
        return out
    }

    /// `s` as a vCard export gives it back when read: line breaks as LF, the other control
    /// characters `escape` leaves out gone, blanks around it trimmed as the reader trims them.
    public static func asWritten(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { isControl($0) || $0 == "\r" }) || s != s.trimmingCharacters(in: .whitespacesAndNewlines) else { return s }
        return unescape(escape(s)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `line` folded for the wire: at most 75 octets per line, continuation lines starting
    /// with a space, never inside a UTF-8 sequence (RFC 6350 section 3.2).
    static func fold(_ line: String) -> String {
        guard line.utf8.count > 75 else { return line }
        var out = ""
        var width = 0
        for scalar in line.unicodeScalars {
            let n = String(scalar).utf8.count
            if width + n > 75 {
                out += "\r\n "
                width = 1
            }
            out.unicodeScalars.append(scalar)
            width += n
        }
        return out
    }
}

extension VCard {
    /// A content line kept from an import (`VCardExtras.properties`) as `version` writes it: its
    /// parameters written again (quoted and RFC 6868-escaped), a line break in its value as `\n`;
    /// a binary value (`ENCODING=b`) as base64 with `ENCODING=b` in 3.0 and as a `data:` URI in
    /// 4.0; other control characters are left out. Nil when the line cannot be written as a
    /// vCard: a value holding a NUL (binary data that an earlier version decoded to text and
    /// kept) or base64 that does not decode.
    static func keptLine(_ line: String, version: VCardVersion) -> String? {
        guard let raw = VCardParser.RawProperty(Array(line.utf8)) else { return nil }
        var value = String(decoding: raw.value, as: UTF8.self)
        var parameters = raw.parameters.map { p in
            VCardParameter(name: p.name, values: p.values.map { String(String.UnicodeScalarView($0.unicodeScalars.filter { !isControl($0) || $0 == "\n" })) })
        }
        let head = (raw.group.map { $0 + "." } ?? "") + raw.spelledName
        let encoding = parameters.last { $0.name == "ENCODING" }?.values.first?.uppercased()
        if encoding == "B" || encoding == "BASE64" {
            guard let data = Data(base64Encoded: value) else { return nil }
            parameters.removeAll { $0.name == "ENCODING" }
            if version == .v3 { return head + parameterText(parameters + [VCardParameter(name: "ENCODING", values: ["b"])]) + ":" + data.base64EncodedString() }
            // 4.0 has no ENCODING: the type of a 3.0 picture (TYPE=JPEG) becomes the media type.
            let types = parameters.filter { $0.name == "TYPE" }.flatMap(\.values)
            let media = types.lazy.compactMap { mediaTypes[$0.uppercased()] }.first ?? "application/octet-stream"
            parameters.removeAll { $0.name == "TYPE" && $0.values.allSatisfy { mediaTypes[$0.uppercased()] != nil } }
            parameters.removeAll { $0.name == "VALUE" }
            return head + parameterText(parameters + [VCardParameter(name: "VALUE", values: ["uri"])]) + ":data:" + media + ";base64," + data.base64EncodedString()
        }
        // A NUL is never text: binary data that an earlier version decoded and kept.
        if value.unicodeScalars.contains("\u{0}") { return nil }
        // Stored values are vCard-escaped already; raw line breaks (a quoted-printable value
        // decoded) are escaped here, other control characters left out.
        value = value.replacingOccurrences(of: "\r\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\n").replacingOccurrences(of: "\n", with: "\\n")
        value = String(String.UnicodeScalarView(value.unicodeScalars.filter { !isControl($0) }))
        // ORG's components are single texts (RFC 6350 6.6.4): a bare comma, which vCard 2.1
        // allows (`ORG:Company, The;Dept`), is escaped, or readers split the name at it.
        if raw.name == "ORG" { value = escapingBareCommas(value) }
        return head + parameterText(parameters) + ":" + value
    }

    /// `value` with each comma not already escaped written `\,`; escapes stay as they are.
    static func escapingBareCommas(_ value: String) -> String {
        guard value.contains(",") else { return value }
        var out = ""
        var escaped = false
        for ch in value {
            if escaped {
                escaped = false
            } else if ch == "\\" {
                escaped = true
            } else if ch == "," {
                out += "\\"
            }
            out.append(ch)
        }
        return out
    }

    /// The parameter marking a value no signature vouches for, on a signed contact's vCard
    /// (docs/PROTOCOL.md, vCard export): `TEL;X-MEISHI-UNSIGNED=true:…`.
    public static let unsignedParameter = "X-MEISHI-UNSIGNED"
    static let unsignedMark = ";" + unsignedParameter + "=true"

    /// The parameter marking the exporter's own note and tags (`contacts export --with-notes`:
    /// `NOTE;X-MEISHI-OWN=true:…`, `CATEGORIES;X-MEISHI-OWN=true:…`), which meishi reads back as
    /// its user's note and tags, never as the contact's values.
    public static let ownParameter = "X-MEISHI-OWN"
    static let ownMark = ";" + ownParameter + "=true"

    /// Parameters as written (`;TYPE=work,pref;PREF=1`) without what makes a value preferred:
    /// `PREF` (4.0) and the `pref` type (3.0).
    static func withoutPreference(_ parameters: String) -> String {
        guard let raw = VCardParser.RawProperty(Array(("X" + parameters + ":").utf8)) else { return "" }
        let kept = raw.parameters.compactMap { p -> VCardParameter? in
            if p.name == "PREF" { return nil }
            guard p.name == "TYPE" else { return p }
            let types = p.values.filter { $0.lowercased() != "pref" }
            return types.isEmpty ? nil : VCardParameter(name: p.name, values: types)
        }
        return parameterText(kept)
    }

    /// Properties a vCard holds at most once (RFC 6350 cardinality `*1`, RFC 2426 and vobject alike).
    static let atMostOnce: Set<String> = ["N", "BDAY", "ANNIVERSARY", "GENDER", "KIND", "SORT-STRING", "CLASS"]

    /// Media types of the picture and sound types vCard 3.0 names.
    static let mediaTypes = ["JPEG": "image/jpeg", "JPG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif", "BMP": "image/bmp",
                             "TIFF": "image/tiff", "WAVE": "audio/wav", "WAV": "audio/wav", "MP3": "audio/mpeg", "PGP": "application/pgp-keys"]
}

/// A kept property `VCard.write` left out, and why.
public struct VCardOmission: Equatable, Sendable {
    public enum Reason: Equatable, Sendable {
        /// Its value holds a NUL: binary data that an earlier version decoded to text and kept.
        case binaryAsText
        /// A second value of a property a vCard holds at most once (`N`, `BDAY`, …).
        case second
        /// A url that is not an http or https address (`javascript:…` on a peer's card or in an
        /// imported vCard): a phone or address book would open it as a link (trial 7, F17).
        case notAWebAddress(String)
    }

    public var property: String
    public var reason: Reason

    public init(property: String, reason: Reason) {
        self.property = property
        self.reason = reason
    }
}

/// The vCard versions meishi writes.
public enum VCardVersion: String, CaseIterable, Sendable {
    case v4 = "4.0"
    case v3 = "3.0"
}

/// One contact as `contacts export` writes it.
public struct VCardEntry: Sendable {
    /// The DID, or `urn:uuid:…` for a contact without one.
    public var uid: String
    /// meishi fields, written in display order.
    public var fields: [FieldName: [String]]
    /// Written as `X-MEISHI-DID` when the contact has a real did:key.
    public var did: String?
    /// Written as `X-MEISHI-TRUST`.
    public var trust: String?
    /// Written as `REV` (Unix seconds).
    public var revision: Int64
    public var extras: VCardExtras
    /// Values of `fields` no signature vouches for on a signed contact (an imported vCard's):
    /// written after the others, with `X-MEISHI-UNSIGNED=true` and never as preferred.
    public var unsigned: [FieldName: [String]]
    /// The exporter's own note about the contact and tags (`contacts export --with-notes`),
    /// written as a NOTE and as CATEGORIES after the card's values, marked `X-MEISHI-OWN=true`.
    public var ownNote: String?
    public var categories: [String] = []

    public init(uid: String, fields: [FieldName: [String]], did: String?, trust: String?, revision: Int64,
                extras: VCardExtras = VCardExtras(), unsigned: [FieldName: [String]] = [:]) {
        self.uid = uid
        self.fields = fields
        self.did = did
        self.trust = trust
        self.revision = revision
        self.extras = extras
        self.unsigned = unsigned
    }
}

extension VCard {
    /// One vCard of `entry` in `version`: RFC 6350 (4.0) or RFC 2426 (3.0) escaping, CRLF line
    /// ends, lines folded at 75 octets, the properties kept from an import written back.
    public static func write(_ entry: VCardEntry, version: VCardVersion) -> String {
        var dropped: [VCardOmission] = []
        return write(entry, version: version, dropped: &dropped)
    }

    /// `write`, with the kept properties that could not be written added to `dropped`.
    public static func write(_ entry: VCardEntry, version: VCardVersion, dropped: inout [VCardOmission]) -> String {
        let v4 = version == .v4
        let kept = entry.extras.propertyNames
        // N, ORG and ADR kept from an import go where meishi would write its own.
        var inPlace: [String: [String]] = [:]
        var rest: [String] = []
        var once: Set<String> = []
        for stored in entry.extras.properties {
            let name = VCardExtras.propertyName(stored)
            if Self.dropped.contains(name) { continue }  // kept by an earlier version: meishi writes its own, or none
            guard let line = keptLine(stored, version: version) else {
                dropped.append(VCardOmission(property: name, reason: .binaryAsText))
                continue
            }
            // Two cards of one person merged by an earlier version: a second N is not valid vCard.
            if Self.atMostOnce.contains(name), !once.insert(name).inserted {
                dropped.append(VCardOmission(property: name, reason: .second))
                continue
            }
            if ["N", "ORG", "ADR"].contains(name) { inPlace[name, default: []].append(line) } else { rest.append(line) }
        }
        var lines = ["BEGIN:VCARD", "VERSION:" + version.rawValue]
        if !v4 { lines.append("PRODID:-//meishi//meishi " + "contacts export//EN") }
        let name = entry.fields[.name]?.first
        let fallback = [FieldName.org, .email, .phone].lazy.compactMap { entry.fields[$0]?.first }.first
        // A name too long for the field is kept as written (with the other kept properties).
        if name != nil || !kept.contains("FN") { lines.append("FN:" + escape(name ?? fallback ?? "-")) }
        lines += inPlace["N"] ?? (kept.contains("N") ? [] : ["N:;" + escape(name ?? "") + ";;;"])
        func isUnsigned(_ field: FieldName, _ value: String) -> Bool { entry.unsigned[field]?.contains(value) ?? false }
        func decorated(_ field: FieldName, _ property: String, _ value: String) -> String {
            let d = entry.extras.decoration(field, value)
            guard isUnsigned(field, value) else { return (d?.group.map { $0 + "." } ?? "") + property + (d?.parameters ?? "") }
            return (d?.group.map { $0 + "." } ?? "") + property + withoutPreference(d?.parameters ?? "") + unsignedMark
        }
        func plain(_ field: FieldName, _ property: String, _ value: String) -> String {
            property + (isUnsigned(field, value) ? unsignedMark : "")
        }
        for field in entry.fields.keys.sorted() {
            // Unsigned values after the signed ones, so that none of them is the first.
            let values = entry.fields[field]!.filter { !isUnsigned(field, $0) } + entry.fields[field]!.filter { isUnsigned(field, $0) }
            for (i, v) in values.enumerated() {
                switch field.rawValue {
                case "name": if i > 0 { lines.append(plain(field, "FN", v) + ":" + escape(v)) }
                case "title": lines.append(plain(field, "TITLE", v) + ":" + escape(v))
                case "org":
                    if let org = inPlace["ORG"] {
                        if i == 0 { lines += org }
                        continue
                    }
                    lines.append(plain(field, "ORG", v) + ":" + escape(v))
                case "email": lines.append(decorated(.email, "EMAIL", v) + ":" + escape(v))
                case "phone": lines.append(decorated(.phone, "TEL", v) + (v4 ? ";VALUE=text" : "") + ":" + escape(v))
                // URIs take no escapes in RFC 6350, but vobject and many phones read URL as text
                // and split it at a bare comma; our reader unescapes either way.
                case "url":
                    guard CardText.isWebAddress(v) else {
                        dropped.append(VCardOmission(property: "URL", reason: .notAWebAddress(v)))
                        continue
                    }
                    lines.append(decorated(.url, "URL", v) + ":" + escape(v))
                case "address":
                    if let adr = inPlace["ADR"] {
                        if i == 0 { lines += adr }
                        continue
                    }
                    if v4 {
                        lines.append(plain(field, "ADR", v) + parameterText([VCardParameter(name: "LABEL", values: [v])]) + ":;;" + escape(v) + ";;;;")
                    } else {
                        lines.append(plain(field, "ADR", v) + ":;;" + escape(v) + ";;;;")
                    }
                case "note": lines.append(plain(field, "NOTE", v) + ":" + escape(v))
                default: lines.append(plain(field, "X-MEISHI-" + field.rawValue.dropFirst(2).uppercased(), v) + ":" + escape(v))
                }
            }
        }
        if entry.fields[.address] == nil { lines += inPlace["ADR"] ?? [] }
        if entry.fields[.org] == nil { lines += inPlace["ORG"] ?? [] }
        lines += rest
        if let note = entry.ownNote { lines.append("NOTE" + ownMark + ":" + escape(note)) }
        if !entry.categories.isEmpty { lines.append("CATEGORIES" + ownMark + ":" + entry.categories.map(escape).joined(separator: ",")) }
        lines.append("UID:" + entry.uid)
        if let did = entry.did { lines.append("X-MEISHI-DID:" + did) }
        if let trust = entry.trust { lines.append("X-MEISHI-TRUST:" + trust) }
        lines.append("REV:" + (v4 ? revision(entry.revision) : UTCTime.rfc3339(entry.revision)))
        lines.append("END:VCARD")
        return lines.map(fold).joined(separator: "\r\n") + "\r\n"
    }
}
