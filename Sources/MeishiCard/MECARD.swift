import Foundation

/// Reading MECARDs.
extension VCard {
    /// A MECARD (`MECARD:N:Tanaka,Mei;TEL:…;;`), as phones and older apps write.
    public static func parseMECARD(_ text: String) -> ImportedContact? {
        guard text.uppercased().hasPrefix("MECARD:") else { return nil }
        var contact = ImportedContact(format: .mecard)
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
                contact.add(.name, parts.count == 2 ? parts[1] + " " + parts[0] : parts.joined(separator: " "))
            case "TEL": contact.add(.phone, v)
            case "EMAIL": contact.add(.email, v)
            case "URL": contact.add(.url, v)
            case "ADR": contact.add(.address, v)
            case "NOTE", "MEMO": contact.add(.note, v)
            case "ORG": contact.add(.org, v)
            case "TITLE": contact.add(.title, v)
            default: break
            }
        }
        return contact.fields.isEmpty ? nil : contact
    }
}
