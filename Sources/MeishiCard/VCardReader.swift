import Foundation

/// Reading vCards: a parsed card (VCardParser) mapped to meishi fields, with what meishi has
/// no field for kept in `extras`.
extension VCard {
    /// The first vCard in `text`, or nil when there is none.
    public static func parse(_ text: String) -> ImportedContact? {
        VCardParser.parse(Array(text.utf8)).cards.lazy.compactMap(contact(from:)).first
    }

    /// Every card in a file's bytes, and what was wrong with the rest.
    public static func read(_ bytes: [UInt8]) -> (contacts: [(line: Int, contact: ImportedContact)], problems: [VCardProblem]) {
        let parsed = VCardParser.parse(bytes)
        var contacts: [(Int, ImportedContact)] = []
        var problems = parsed.problems
        for card in parsed.cards {
            if let c = contact(from: card) {
                contacts.append((card.line, c))
                if c.name == nil, let fn = card.properties.first(where: { $0.name == "FN" }), fn.text.utf8.count > Card.maximumValueBytes {
                    problems.append(VCardProblem(line: card.line, reason: .nameTooLong(limit: Card.maximumValueBytes)))
                }
            } else {
                problems.append(VCardProblem(line: card.line, reason: .emptyCard))
            }
        }
        problems.sort { $0.line < $1.line }
        return (contacts, problems)
    }

    /// Properties meishi drops on import: it writes its own on export (or, for `PROFILE:VCARD`
    /// and a `BEGIN` or `END` of something else than a vCard, nothing: they are structure, not
    /// data, and vobject refuses a card holding them).
    static let dropped: Set<String> = ["VERSION", "REV", "PRODID", "UID", "X-MEISHI-DID", "X-MEISHI-TRUST", "X-MEISHI-LEVEL",
                                       "PROFILE", "BEGIN", "END"]
    /// Properties kept exactly as written besides the field they fill, which flattens them.
    static let keptAsWritten: Set<String> = ["N", "ORG", "ADR"]

    /// The contact a parsed card holds, or nil when it holds nothing meishi can store.
    public static func contact(from card: ParsedVCard) -> ImportedContact? {
        var contact = ImportedContact(format: .vcard(version: card.version ?? "3.0"))
        var nameFromN: String?
        var ownExport = false  // meishi wrote it (`contacts export`): it carries X-MEISHI-TRUST
        var emptyN = false
        for prop in card.properties {
            if VCardParser.binaryProperties.contains(prop.name) { continue }  // skipped, never stored
            if prop.isBinary {  // a picture in X-MS-CARDPICTURE: kept as base64, never a field
                if !Self.dropped.contains(prop.name) { contact.extras.keep(prop) }
                continue
            }
            var kept = false
            // meishi's own note and tags (`--with-notes`): the user's, not the card's.
            if prop.name == "NOTE" || prop.name == "CATEGORIES",
               prop.parameter(VCard.ownParameter)?.contains(where: { $0.lowercased() == "true" }) == true {
                if prop.name == "NOTE" {
                    let note = prop.text.trimmingCharacters(in: .whitespacesAndNewlines)
                    if !note.isEmpty { contact.ownNote = note }
                } else {
                    contact.ownTags += VCard.unescaped(prop.value, splittingAt: ",")
                        .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                }
                continue
            }
            switch prop.name {
            case "FN": kept = contact.add(.name, prop.text)
            case "N":
                let c = prop.components
                let parts = [c[safe: 3], c[safe: 1], c[safe: 2], c[safe: 0], c[safe: 4]].compactMap { $0 }
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                if !parts.isEmpty, nameFromN == nil { nameFromN = parts.joined(separator: " ") }
                if parts.isEmpty { emptyN = true }
            case "ORG": _ = contact.add(.org, prop.components.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: ", "))
            case "TITLE": kept = contact.add(.title, prop.text)
            case "EMAIL":
                var t = prop.text.trimmingCharacters(in: .whitespaces)
                if t.lowercased().hasPrefix("mailto:") { t = String(t.dropFirst(7)) }
                kept = contact.add(.email, t, decoration: decoration(of: prop))
            case "TEL":
                var t = prop.text.trimmingCharacters(in: .whitespaces)
                if t.lowercased().hasPrefix("tel:") { t = String(t.dropFirst(4)) }
                kept = contact.add(.phone, t, decoration: decoration(of: prop))
            case "URL": kept = contact.add(.url, prop.text, decoration: decoration(of: prop))
            case "ADR": _ = contact.add(.address, prop.components.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: ", "))
            case "NOTE": kept = contact.add(.note, prop.text)
            case "REV": contact.revision = parseRevision(prop.text)
            case "UID":
                let u = prop.text.trimmingCharacters(in: .whitespacesAndNewlines)
                if !u.isEmpty, u.utf8.count <= Self.maximumUIDBytes, !u.unicodeScalars.contains(where: isControl) { contact.uid = u }
            case "X-MEISHI-TRUST": ownExport = true
            case "X-MEISHI-DID":
                let d = prop.text.trimmingCharacters(in: .whitespaces)
                if DIDKey.ed25519PublicKey(from: d) != nil { contact.did = d }
            default:
                if prop.name.hasPrefix("X-MEISHI-"), !Self.dropped.contains(prop.name), let f = try? FieldName("x-" + prop.name.dropFirst(9).lowercased()) {
                    kept = contact.add(f, prop.text)
                }
            }
            // Everything meishi has no field for, a value it could not keep (too long, one
            // too many), and N, ORG and ADR exactly as written (meishi's fields flatten them).
            if Self.keptAsWritten.contains(prop.name) || (!kept && !Self.dropped.contains(prop.name)) {
                contact.extras.keep(prop)
            }
        }
        if contact.fields[.name] == nil, let n = nameFromN { _ = contact.add(.name, n) }
        if ownExport { dropExportFallbacks(&contact, emptyN: emptyN) }
        return contact.fields.isEmpty && contact.did == nil && contact.extras.properties.isEmpty ? nil : contact
    }

    /// Longest `UID` kept (a UUID URN is 45 bytes, a did:key 56).
    static let maximumUIDBytes = 256

    /// What `write` adds to a nameless contact's vCard, taken out again when meishi reads its own
    /// export: the `FN` it falls back on (the organisation, first email or phone, or `-`) when
    /// `N` is empty, and the `N`, `ORG` and `ADR` lines it writes from the fields, which are not
    /// properties the contact held.
    static func dropExportFallbacks(_ contact: inout ImportedContact, emptyN: Bool) {
        let fields = contact.fields
        if emptyN, let n = fields[.name]?.first, n == [FieldName.org, .email, .phone].lazy.compactMap({ fields[$0]?.first }).first ?? "-" {
            contact.fields[.name] = nil
        }
        let name = contact.fields[.name]?.first
        var written: Set<String> = ["N:;" + escape(name ?? "") + ";;;"]
        for v in contact.fields[.org] ?? [] { written.insert("ORG:" + escape(v)) }
        for v in contact.fields[.address] ?? [] {
            written.insert("ADR:;;" + escape(v) + ";;;;")
            written.insert("ADR" + parameterText([VCardParameter(name: "LABEL", values: [v])]) + ":;;" + escape(v) + ";;;;")
        }
        contact.extras.properties.removeAll { written.contains($0) }
    }

    /// The group and parameters of an EMAIL, TEL or URL, kept so export can write them back.
    static func decoration(of prop: VCardProperty) -> VCardExtras.Decoration? {
        let params = prop.parameters.filter { $0.name != "VALUE" && $0.name != VCard.unsignedParameter }
        guard prop.group != nil || !params.isEmpty else { return nil }
        return VCardExtras.Decoration(group: prop.group, parameters: VCard.parameterText(params))
    }

    static func parseRevision(_ s: String) -> Int64? {
        let digits = s.unicodeScalars.filter { ("0"..."9").contains($0) }.map { Int($0.value - 48) }
        guard digits.count >= 8 else { return nil }
        func number(_ r: Range<Int>) -> Int { r.reduce(0) { $0 * 10 + digits[$1] } }
        var c = DateComponents()
        c.year = number(0..<4); c.month = number(4..<6); c.day = number(6..<8)
        if digits.count >= 14 { c.hour = number(8..<10); c.minute = number(10..<12); c.second = number(12..<14) }
        guard (1...12).contains(c.month!), (1...31).contains(c.day!) else { return nil }
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "UTC")!
        return cal.date(from: c).map { Int64($0.timeIntervalSince1970) }
    }
}
