import Foundation

/// Writing vCards.
extension VCard {
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
}
