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

    public init(uid: String, fields: [FieldName: [String]], did: String?, trust: String?, revision: Int64,
                extras: VCardExtras = VCardExtras()) {
        self.uid = uid
        self.fields = fields
        self.did = did
        self.trust = trust
        self.revision = revision
        self.extras = extras
    }
}

extension VCard {
    /// One vCard of `entry` in `version`: RFC 6350 (4.0) or RFC 2426 (3.0) escaping, CRLF line
    /// ends, lines folded at 75 octets, the properties kept from an import written back.
    public static func write(_ entry: VCardEntry, version: VCardVersion) -> String {
        let v4 = version == .v4
        let kept = entry.extras.propertyNames
        // N, ORG and ADR kept from an import go where meishi would write its own.
        var inPlace: [String: [String]] = [:]
        var rest: [String] = []
        for line in entry.extras.properties {
            let name = VCardExtras.propertyName(line)
            if ["N", "ORG", "ADR"].contains(name) { inPlace[name, default: []].append(line) } else { rest.append(line) }
        }
        var lines = ["BEGIN:VCARD", "VERSION:" + version.rawValue]
        if !v4 { lines.append("PRODID:-//meishi//meishi " + "contacts export//EN") }
        let name = entry.fields[.name]?.first
        let fallback = [FieldName.org, .email, .phone].lazy.compactMap { entry.fields[$0]?.first }.first
        lines.append("FN:" + escape(name ?? fallback ?? "-"))
        lines += inPlace["N"] ?? (kept.contains("N") ? [] : ["N:;" + escape(name ?? "") + ";;;"])
        func decorated(_ field: FieldName, _ property: String, _ value: String) -> String {
            let d = entry.extras.decoration(field, value)
            return (d?.group.map { $0 + "." } ?? "") + property + (d?.parameters ?? "")
        }
        for field in entry.fields.keys.sorted() {
            for (i, v) in entry.fields[field]!.enumerated() {
                switch field.rawValue {
                case "name": if i > 0 { lines.append("FN:" + escape(v)) }
                case "title": lines.append("TITLE:" + escape(v))
                case "org": lines += inPlace["ORG"] ?? ["ORG:" + escape(v)]
                case "email": lines.append(decorated(.email, "EMAIL", v) + ":" + escape(v))
                case "phone": lines.append(decorated(.phone, "TEL", v) + (v4 ? ";VALUE=text" : "") + ":" + escape(v))
                // URIs take no escapes in RFC 6350, but vobject and many phones read URL as text
                // and split it at a bare comma; our reader unescapes either way.
                case "url": lines.append(decorated(.url, "URL", v) + ":" + escape(v))
                case "address":
                    if let adr = inPlace["ADR"] {
                        if i == 0 { lines += adr }
                        continue
                    }
                    if v4 {
                        lines.append("ADR" + parameterText([VCardParameter(name: "LABEL", values: [v])]) + ":;;" + escape(v) + ";;;;")
                    } else {
                        lines.append("ADR:;;" + escape(v) + ";;;;")
                    }
                case "note": lines.append("NOTE:" + escape(v))
                default: lines.append("X-MEISHI-" + field.rawValue.dropFirst(2).uppercased() + ":" + escape(v))
                }
            }
        }
        if entry.fields[.address] == nil { lines += inPlace["ADR"] ?? [] }
        if entry.fields[.org] == nil { lines += inPlace["ORG"] ?? [] }
        lines += rest
        lines.append("UID:" + entry.uid)
        if let did = entry.did { lines.append("X-MEISHI-DID:" + did) }
        if let trust = entry.trust { lines.append("X-MEISHI-TRUST:" + trust) }
        lines.append("REV:" + (v4 ? revision(entry.revision) : UTCTime.rfc3339(entry.revision)))
        lines.append("END:VCARD")
        return lines.map(fold).joined(separator: "\r\n") + "\r\n"
    }
}
