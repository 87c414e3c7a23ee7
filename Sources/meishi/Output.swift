import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

/// Everything the commands print goes through here: errors, JSON, sanitised peer text.
enum Output {
    static func report(_ failure: MeishiFailure) {
        var text = "meishi: error: \(failure.message)\n"
        if let hint = failure.hint { text += "meishi: hint: \(hint)\n" }
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func warn(_ message: String) {
        FileHandle.standardError.write(Data("meishi: warning: \(message)\n".utf8))
    }

    static func note(_ message: String) {
        FileHandle.standardError.write(Data("meishi: \(message)\n".utf8))
    }

    /// Writes one JSON document (sorted keys, indented) and a newline to standard output.
    static func json(_ value: JSONValue) {
        var out = ""
        json(value, into: &out)
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    /// The same document appended to `out`, for a file.
    static func json(_ value: JSONValue, into out: inout String) {
        out += pretty(value, indent: "") + "\n"
    }

    private static func pretty(_ v: JSONValue, indent: String) -> String {
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

    /// Text from someone else, made safe for the terminal.
    static func safe(_ s: String) -> String { TerminalText.sanitized(s) }

    /// "3 minutes ago" style age.
    static func age(_ seconds: Int64) -> String {
        if seconds < 0 { return "\(-seconds) s in the future" }
        if seconds < 90 { return "\(seconds) s ago" }
        if seconds < 5400 { return "\(seconds / 60) min ago" }
        if seconds < 129_600 { return "\(seconds / 3600) h ago" }
        return "\(seconds / 86400) days ago"
    }

    static func date(_ unix: Int64) -> String { UTCTime.rfc3339(unix) }

    /// A card's fields as aligned, sanitised lines.
    static func fieldLines(_ fields: [(name: String, values: [String])]) -> String {
        let width = max(11, fields.map(\.name.count).max() ?? 0)
        var out = ""
        for f in fields {
            for v in f.values {
                out += "  " + f.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + safe(v) + "\n"
            }
        }
        return out
    }

    static func orderedFields(_ fields: [String: [String]]) -> [(name: String, values: [String])] {
        fields.map { (name: $0.key, values: $0.value) }.sorted {
            if let a = try? FieldName($0.name), let b = try? FieldName($1.name) { return a < b }
            return $0.name < $1.name
        }
    }

    /// Warns about every stored contact the new card's name or email collides with, then says
    /// what storing it did, as `contacts add` and `scan` print it.
    static func reportStored(_ outcome: StoreOutcome) {
        warnConflicts(outcome)
        let c = outcome.contact
        if case .unchanged = outcome {
            print("unchanged: the stored card of \(safe(c.name ?? c.did)) is as new or newer (#\(c.id ?? 0), \(c.trust.rawValue))")
        } else {
            print("\(outcome.name) \(safe(c.name ?? "(no name)")) as #\(c.id ?? 0) (\(c.trust.rawValue)) \(c.did)")
        }
    }

    /// A warning on stderr for each stored contact the new card may impersonate.
    static func warnConflicts(_ outcome: StoreOutcome) {
        let c = outcome.contact
        for other in outcome.conflicts {
            warn("\(safe(c.name ?? c.did)) uses the same name or email as contact #\(other.id ?? 0) "
                 + "(\(other.did)) under a different key: possible impersonation")
        }
    }

    /// The JSON form of a stored contact (field names are stable for scripts).
    static func contactJSON(_ c: Contact) -> JSONValue {
        var obj: [String: JSONValue] = [
            "id": .number(Double(c.id ?? 0)),
            "did": .string(c.did),
            "fields": .object(c.fields.mapValues { .array($0.map(JSONValue.string)) }),
            "level": .string(c.level.rawValue),
            "trust": .string(c.trust.rawValue),
            "source": .string(c.source),
            "firstSeen": .number(Double(c.firstSeen)),
            "lastSeen": .number(Double(c.lastSeen)),
            "cardTimestamp": .number(Double(c.cardTimestamp)),
            "possibleImpersonationOf": .array(c.conflictIDs.map { .number(Double($0)) }),
        ]
        if let n = c.name { obj["name"] = .string(n) }
        if let u = c.unsignedFields { obj["unsignedFields"] = .object(u.mapValues { .array($0.map(JSONValue.string)) }) }
        let kept = VCardExtras(json: c.vcard).properties
        if !kept.isEmpty { obj["vcardProperties"] = .array(kept.map(JSONValue.string)) }
        if let k = c.signPubKey { obj["fingerprint"] = .string(PublicIdentity.fingerprint(of: Array(k))) }
        return .object(obj)
    }

    /// Writes `bytes` to `path`, or to standard output for nil or "-".
    static func write(_ bytes: [UInt8], to path: String?) throws {
        if let path, path != "-" {
            do { try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
                throw MeishiFailure("cannot write \(path): \(error.localizedDescription)", status: .failure)
            }
        } else {
            FileHandle.standardOutput.write(Data(bytes))
        }
    }
}
