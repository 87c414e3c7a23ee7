import MeishiCard
import MeishiKit
import MeishiStore
import MeishiText

/// How cards and contacts look on the terminal and in JSON: one definition for every command.
enum CardRendering {
    /// Width of the label column in card blocks.
    static let labelWidth = 11

    /// A card's fields in display order, then labelled rows (did, fingerprint, …): the block that
    /// exchange, scan, verify and contacts print under their first line. Values are sanitised;
    /// only an address and a note span lines (`spansLines`): a line break in any other value (a
    /// peer's name) is escaped, so that it cannot draw a line of its own.
    static func block(_ fields: [FieldName: [String]], rows: [(label: String, value: String)]) -> String {
        let ordered = fields.keys.sorted()
        let width = max(labelWidth, ordered.map(\.rawValue.count).max() ?? 0, rows.map(\.label.count).max() ?? 0)
        func row(_ label: String, _ value: String) -> String {
            "  " + DisplayWidth.padded(label, to: width) + "  " + value + "\n"
        }
        var out = ""
        for name in ordered {
            for v in fields[name]! { out += row(name.rawValue, spansLines.contains(name) ? multiline(v, indent: width + 4) : Console.safe(v)) }
        }
        for r in rows { out += row(r.label, r.value) }
        return String(out.dropLast())
    }

    /// The fields whose values may span lines on display.
    static let spansLines: Set<FieldName> = [.address, .note]

    /// A value of several lines (an address) with each line sanitised and the lines after the
    /// first indented by `indent` columns, under the first.
    static func multiline(_ value: String, indent: Int) -> String {
        value.split(separator: "\n", omittingEmptySubsequences: false).map { Console.safe(String($0)) }
            .joined(separator: "\n" + String(repeating: " ", count: indent))
    }

    /// The fields of a payload, keyed by name.
    static func fields(of p: ProximityPayload) -> [FieldName: [String]] { p.cardFields.mapValues(\.values) }

    /// A contact where it is named as a sender or a friend: name, contact id and trust, and for a
    /// newcomer sharing the name or email of an earlier contact, the `!` mark naming that one,
    /// so a look-alike never reads the same as the contact it copies.
    static func who(_ c: Contact) -> String {
        "\(name(c.name)) (#\(c.id ?? 0), \(c.trust.rawValue))" + lookAlikeMark(c)
    }

    /// " ! same name or email as #2" for a newcomer; "" otherwise.
    static func lookAlikeMark(_ c: Contact) -> String {
        let earlier = c.earlierLookAlikes
        return earlier.isEmpty ? "" : " ! same name or email as " + earlier.map { "#\($0)" }.joined(separator: ", ")
    }

    /// The name a card or contact is shown by.
    static func name(_ n: String?) -> String { Console.safe(n ?? "(no name)") }

    /// "3 minutes ago" style age.
    static func age(_ seconds: Int64) -> String {
        if seconds < 0 { return "\(-seconds) s in the future" }
        if seconds < 90 { return "\(seconds) s ago" }
        if seconds < 5400 { return "\(seconds / 60) min ago" }
        if seconds < 129_600 { return "\(seconds / 3600) h ago" }
        return "\(seconds / 86400) days ago"
    }

    static func date(_ unix: Int64) -> String { UTCTime.rfc3339(unix) }

    /// A stored contact as `contacts show` and `contacts add` print it; `earlier` (what its
    /// earlier cards said that the current one does not) follows the current card, under a line
    /// per card: "from an earlier card, 2026-11-20: email, phone ×2".
    /// `firstSource` is how it was first seen (`contacts show`), when it differs from `source`,
    /// the latest card's, which the "last seen" row then names.
    static func contact(_ c: Contact, earlier earlierCards: [EarlierValues] = [], meetings: [Meeting] = [],
                        notes: PrivateNotes = PrivateNotes(), firstSource: ContactSource? = nil,
                        rotations: [KeyRotation] = []) -> String {
        var rows: [(String, String)] = [("did", c.did)]
        if let k = c.signPubKey { rows.append(("fingerprint", k.fingerprint)) }
        let first = firstSource ?? c.source
        rows += [("level", c.level.rawValue), ("signed", date(c.cardTimestamp)),
                 ("first seen", "\(date(c.firstSeen)) via \(first.rawValue)"),
                 ("last seen", date(c.lastSeen) + (first == c.source ? "" : " (latest card via \(c.source.rawValue))"))]
        let unsigned = c.unsignedFields ?? [:]
        for name in unsigned.keys.sorted() {
            for v in unsigned[name]! { rows.append((name.rawValue, Console.safe(v) + "  (unsigned: from a vCard, not signed)")) }
        }
        let kept = VCardExtras(json: c.vcard).properties.count
        if kept > 0 { rows.append(("vcard", "\(kept) other propert\(kept == 1 ? "y" : "ies") kept for 'contacts export'")) }
        let earlier = c.earlierLookAlikes, later = c.laterLookAlikes
        if !earlier.isEmpty {
            rows.append(("warning", "same name or email as contact \(earlier.map { "#\($0)" }.joined(separator: ", ")), stored before it: "
                         + "possible impersonation"))
        }
        if !later.isEmpty {
            rows.append(("warning", "contact \(later.map { "#\($0)" }.joined(separator: ", ")), stored after it, has the same name or email: "
                         + "possible impersonation of this one"))
        }
        var out = "\(name(c.name))  [#\(c.id ?? 0), \(c.trust.rawValue)]\n" + block(c.fields, rows: rows)
        for group in earlierCards {
            out += "\nfrom an earlier card, \(day(group.card.received)) (\(group.card.source.rawValue), signed \(date(group.card.cardTimestamp))): "
                + fieldCounts(group.fields) + "\n" + block(group.fields, rows: [])
        }
        if earlierCards.isEmpty, let f = c.earlierFields {
            out += "\nfrom earlier cards: " + fieldCounts(f) + "\n" + block(f, rows: [])
        }
        // Newest first: "rotated key on 2026-11-26 (was did:key:z6Mk…)", a statement signed by both keys.
        for r in rotations.reversed() { out += "\nrotated key on \(day(r.time)) (was \(Console.safe(r.oldDID)))" }
        if !meetings.isEmpty { out += "\nmet:\n" + meetings.map { "  " + meeting($0) }.joined(separator: "\n") }
        if !notes.tags.isEmpty { out += "\nyour tags: " + notes.tags.map(Console.safe).joined(separator: ", ") }
        if let note = notes.note {
            out += "\nyour note (never shared):\n" + note.split(separator: "\n", omittingEmptySubsequences: false)
                .map { "  " + Console.safe(String($0)) }.joined(separator: "\n")
        }
        return out
    }

    /// "2026-11-25 14:02 by exchange with a code, at PyCon JP 2026" (the event sanitised).
    static func meeting(_ m: Meeting) -> String {
        let how = switch m.how {
        case .exchange: "by exchange"
        case .code: "by exchange with a code"
        case .table: "at a table exchange"
        case .relay: "by exchange with a code, met through a mailbox server (--relay)"
        case .qr: "by QR code"
        case .file: "from a file"
        case .import: "imported"
        }
        let when = date(m.at).replacingOccurrences(of: "T", with: " ").prefix(16)
        return "\(when) \(how)" + (m.event.map { ", at " + Console.safe($0) } ?? "")
    }

    /// A meeting in JSON: `at`, `how` and, when one was named, `event`.
    static func json(_ m: Meeting) -> JSONValue {
        var obj: [String: JSONValue] = ["at": .string(date(m.at)), "how": .string(m.how.rawValue)]
        if let e = m.event { obj["event"] = .string(e) }
        return .object(obj)
    }

    /// "2026-11-20": the day of a Unix time (UTC).
    static func day(_ unix: Int64) -> String { String(date(unix).prefix(10)) }

    /// "updated Mei Tanaka (#1, met): title changed, +url, email no longer shared (kept from the
    /// earlier card: meishi contacts show 1)" for a contact whose card a newer one replaced; nil
    /// for any other.
    static func replacement(_ c: Contact) -> String? {
        guard c.replaced != nil else { return nil }
        let changes = c.changes
        let withdrawn = changes.contains { if case .withdrawn = $0 { true } else { false } }
        return "updated \(name(c.name)) (#\(c.id ?? 0), \(c.trust.rawValue)): "
            + (changes.isEmpty ? "a newer card, nothing changed" : changes.map(change).joined(separator: ", "))
            + (withdrawn ? " (what it no longer shares is kept from the earlier card: meishi contacts show \(c.id ?? 0))" : "")
    }

    /// "Ken Sato (#1) updated their card: title changed, +phone" (`listen`, for a pushed card);
    /// a new name is said old → new: "Eve (#2) now calls themselves Mei Tanaka; +email".
    static func pushed(_ c: Contact) -> String {
        updated(name: c.name, previousName: c.replaced?.fields[.name]?.first, id: c.id ?? 0, changes: c.changes)
    }

    /// A card that replaced another, as `listen` and `contacts changes` say it: "Ken Sato (#1)
    /// updated their card: title changed", or with a new name "Eve (#2) now calls themselves Mei
    /// Tanaka; +email" (`previousName` the name on the card replaced); `how` follows the id.
    static func updated(name new: String?, previousName old: String?, id: Int64, how: String? = nil,
                        changes: [FieldChange]) -> String {
        let tag = "(#\(id)" + (how.map { ", " + $0 } ?? "") + ")"
        if let old, old != new {
            let rest = changes.filter { $0 != .changed(.name) && $0 != .added(.name, count: 1) }
            return "\(name(old)) \(tag) now calls themselves \(name(new))" + (rest.isEmpty ? "" : "; " + rest.map(change).joined(separator: ", "))
        }
        return "\(name(new)) \(tag) updated their card" + (changes.isEmpty ? " (nothing changed)" : ": " + changes.map(change).joined(separator: ", "))
    }

    /// "Ken Sato moved to a new key (rotated on 2026-11-26, did:key:z6Mk…): title changed" for a
    /// key rotation `listen` or an exchange applied.
    static func rotated(_ r: RotationApplied) -> String {
        let changes = r.card.contact.changes
        let when = r.rotations.last.map { day($0.time) } ?? "?"
        return "\(name(r.contact.name)) (#\(r.contact.id ?? 0)) moved to a new key (rotated on \(when), was \(Console.safe(r.from)))"
            + (changes.isEmpty ? "" : ": " + changes.map(change).joined(separator: ", "))
    }

    /// One change of a card in words: "+url", "phone ×2 no longer shared", "title changed".
    static func change(_ c: FieldChange) -> String {
        func times(_ n: Int) -> String { n > 1 ? " ×\(n)" : "" }
        switch c {
        case .added(let f, let n): return "+\(f.rawValue)" + times(n)
        case .changed(let f): return "\(f.rawValue) changed"
        case .withdrawn(let f, let n, let all): return "\(f.rawValue)" + times(n) + (all ? " no longer shared" : " fewer")
        case .level(let from, let to): return "level \(to.rawValue) (was \(from.rawValue))"
        }
    }

    /// "email, phone ×2": the fields of `f` with their value counts.
    static func fieldCounts(_ f: [FieldName: [String]]) -> String {
        f.keys.sorted().map { $0.rawValue + (f[$0]!.count > 1 ? " ×\(f[$0]!.count)" : "") }.joined(separator: ", ")
    }

    /// Fields as a JSON object of arrays of strings.
    static func fields(_ f: [FieldName: [String]]) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: f.map { ($0.key.rawValue, JSONValue.array($0.value.map(JSONValue.string))) }))
    }

    /// The JSON form of a stored contact (field names are stable for scripts), with
    /// `earlierCards` when `earlier` is given (`contacts show`).
    static func json(_ c: Contact) -> JSONValue { json(c, earlier: nil) }

    static func json(_ c: Contact, earlier: [EarlierValues]?, meetings: [Meeting]? = nil, notes: PrivateNotes? = nil,
                     firstSource: ContactSource? = nil, rotations: [KeyRotation]? = nil) -> JSONValue {
        var obj: [String: JSONValue] = [
            "id": .number(Double(c.id ?? 0)),
            "did": .string(c.did),
            "fields": fields(c.fields),
            "level": .string(c.level.rawValue),
            "trust": .string(c.trust.rawValue),
            // How its latest card came; `firstSource` how it was first seen.
            "source": .string(c.source.rawValue),
            "firstSeen": .string(date(c.firstSeen)),
            "lastSeen": .string(date(c.lastSeen)),
            "cardTimestamp": .string(date(c.cardTimestamp)),
            // Stored before it with the same name or email / stored after it with them.
            "possibleImpersonationOf": .array(c.earlierLookAlikes.map { .number(Double($0)) }),
            "possiblyImpersonatedBy": .array(c.laterLookAlikes.map { .number(Double($0)) }),
        ]
        if let firstSource { obj["firstSource"] = .string(firstSource.rawValue) }
        if let n = c.name { obj["name"] = .string(n) }
        // The vCard UID its export carries, and which finds it again on import.
        obj["uid"] = .string(c.exportUID)
        if let u = c.unsignedFields { obj["unsignedFields"] = fields(u) }
        // What earlier cards said that the current one (`fields`) does not.
        if let e = c.earlierFields { obj["earlierFields"] = fields(e) }
        // On a card that just replaced another (exchange, scan, contacts add): what changed, in words.
        if c.replaced != nil { obj["changes"] = .array(c.changes.map { .string(change($0)) }) }
        if let earlier {
            obj["earlierCards"] = .array(earlier.map { group in
                .object(["received": .string(date(group.card.received)), "cardTimestamp": .string(date(group.card.cardTimestamp)),
                         "source": .string(group.card.source.rawValue), "trust": .string(group.card.trust.rawValue),
                         "level": .string(group.card.level.rawValue), "fields": fields(group.fields)])
            })
        }
        if let meetings { obj["meetings"] = .array(meetings.map(json)) }
        // The keys it replaced, oldest first, each with the time it was replaced and when that was learnt.
        if let rotations {
            obj["rotations"] = .array(rotations.map { r in
                .object(["oldDID": .string(r.oldDID), "newDID": .string(r.newDID), "time": .string(date(r.time)),
                         "received": .string(date(r.received))])
            })
        }
        if let notes {
            obj["tags"] = .array(notes.tags.map(JSONValue.string))
            obj["note"] = notes.note.map(JSONValue.string) ?? .null
        }
        let kept = VCardExtras(json: c.vcard).properties
        if !kept.isEmpty { obj["vcardProperties"] = .array(kept.map(JSONValue.string)) }
        if let k = c.signPubKey { obj["fingerprint"] = .string(k.fingerprint) }
        return .object(obj)
    }
}

extension Console {
    /// Warns about every stored contact the new card's name or email collides with, then says
    /// what storing it did, as `contacts add` and `scan` print it.
    func reportStored(_ outcome: StoreOutcome) {
        warnConflicts(outcome)
        let c = outcome.contact
        if case .unchanged = outcome {
            line("unchanged: the stored card of \(Console.safe(c.name ?? c.did)) is as new or newer (#\(c.id ?? 0), \(c.trust.rawValue))")
        } else if let replaced = CardRendering.replacement(c) {
            line(replaced)
        } else {
            line("\(outcome.name) \(CardRendering.name(c.name)) as #\(c.id ?? 0) (\(c.trust.rawValue)) \(c.did)")
        }
    }

    /// Most look-alike warnings about one contact; the rest are counted in one line.
    static let lookAlikesWarnedPerContact = 3

    /// A warning on stderr for each stored contact the new card may impersonate.
    func warnConflicts(_ outcome: StoreOutcome) {
        let c = outcome.contact
        warnConflicts(c, who: Console.safe(c.name ?? c.did), outcome.conflicts, sharing: "name or email")
    }

    /// A warning for each of `others`, whose name or values (`sharing`) the contact `c` (shown as
    /// `who`) shares. The newcomer is named as the possible impersonator: the contact first seen
    /// later, which is not always the card that just arrived (the real Ken exchanging after a
    /// fake one was stored). Only a verified contact can be impersonated: when the one first seen
    /// is unsigned (an imported vCard, no key), the two are said to be kept apart, as a note.
    func warnConflicts(_ c: Contact, who: String, _ others: [Contact], sharing: String) {
        // A name thousands share (an import of a company directory) would otherwise print up to
        // `maximumLookAlikes` lines per card.
        defer {
            if others.count > Self.lookAlikesWarnedPerContact {
                warn(CardRendering.moreLookAlikes(others.count - Self.lookAlikesWarnedPerContact, of: who, id: c.id ?? 0))
            }
        }
        for other in others.prefix(Self.lookAlikesWarnedPerContact) {
            let otherIsNewer = (other.firstSeen, other.id ?? 0) > (c.firstSeen, c.id ?? 0)
            if (otherIsNewer ? c.trust : other.trust) == .unsigned {
                note(CardRendering.keptApart(who: who, id: c.id ?? 0, other: other, sharing: sharing))
            } else if otherIsNewer {
                warn(CardRendering.impersonatedBy(other: other, of: who, id: c.id ?? 0, sharing: sharing))
            } else {
                warn(CardRendering.impersonating(who: who, other: other, sharing: sharing))
            }
        }
    }
}

/// Possible impersonation, naming the newcomer (the warnings `warnConflicts` prints).
extension CardRendering {
    /// A stored contact as a look-alike message names it: "#3 Ken Sato (signed)"; never its
    /// store key (`unsigned:card:…` means nothing to a person).
    static func lookAlike(_ c: Contact) -> String {
        "#\(c.id ?? 0) \(name(c.name)) (\(c.trust.rawValue))"
    }

    /// `who` (just stored) is the newcomer, and `other` a verified contact.
    static func impersonating(who: String, other: Contact, sharing: String) -> String {
        "\(who) uses the same \(sharing) as contact \(lookAlike(other)) under a different key: possible impersonation"
    }

    /// `who` (#`id`) and `other` share a name, email or phone, and the one first seen is unsigned:
    /// no key to impersonate, two cards kept apart.
    static func keptApart(who: String, id: Int64, other: Contact, sharing: String) -> String {
        "\(who) (#\(id)) kept apart from \(lookAlike(other)), which has the same \(sharing)"
    }

    /// More look-alikes of `who` (#`id`) than are warned about one by one (`n` or more: a
    /// contact records the first `ContactStore.maximumLookAlikes`).
    static func moreLookAlikes(_ n: Int, of who: String, id: Int64) -> String {
        "\(who) (#\(id)) also shares its name or email with \(n) or more other contacts: see 'meishi contacts show \(id)'"
    }

    /// The stored `other` came later than `who` (#`id`) and uses its name: `other` is the newcomer.
    static func impersonatedBy(other: Contact, of who: String, id: Int64, sharing: String) -> String {
        "contact \(lookAlike(other)), stored later, uses the same \(sharing) as "
            + "\(who) (#\(id)) " + (other.trust == .unsigned ? "without its key" : "under a different key")
            + ": #\(other.id ?? 0) may be impersonating them"
    }
}
