import Foundation
import GRDB
import MeishiCard

/// An unsigned card to import, with the key it is stored under when it becomes a new contact:
/// `unsigned:` and the DID it claims, or a digest of its name, email and phone (never a
/// verified DID, so an unsigned card never lands on one).
public struct UnsignedCard: Sendable {
    public var contact: ImportedContact
    public var key: String

    public init(_ contact: ImportedContact, key: String) {
        precondition(key.hasPrefix("unsigned:"))
        self.contact = contact
        self.key = key
    }
}

/// What importing one unsigned card (a vCard or MECARD) did.
public enum ImportOutcome: Equatable, Sendable {
    /// Stored as a new unsigned contact; `conflicts` are verified or other contacts it may impersonate.
    case imported(Contact, conflicts: [Contact])
    /// Added what was missing to an existing contact: `added` per field. Into a verified contact
    /// (its DID in `X-MEISHI-DID`) the values land in `unsignedFields`, apart from the signed ones.
    case merged(Contact, added: [String: [String]])
    /// An existing contact already holds everything the card holds.
    case unchanged(Contact)

    public var contact: Contact {
        switch self {
        case .imported(let c, _), .merged(let c, _), .unchanged(let c): c
        }
    }

    /// `imported`, `merged` or `unchanged`, as `--json` output names it.
    public var name: String {
        switch self {
        case .imported: "imported"
        case .merged: "merged"
        case .unchanged: "unchanged"
        }
    }
}

extension Contact {
    /// A `fields`-shaped JSON column (`{"email":["a@example.org"]}`), or nil.
    static func fieldMap(_ json: String?) -> [String: [String]]? {
        guard let json, case .object(let members)? = try? StrictJSONParser.parse(Array(json.utf8)) else { return nil }
        var out: [String: [String]] = [:]
        for m in members {
            guard case .array(let items) = m.value else { continue }
            out[m.key] = items.compactMap { if case .string(let v) = $0 { v } else { nil } }
        }
        return out
    }

    /// The form two emails or two phones are compared in.
    static func normalized(_ field: String, _ value: String) -> String {
        field == "email" ? CardText.normalizedEmail(value) : field == "phone" ? (CardText.e164(value) ?? value) : value
    }
}

extension ContactStore {
    /// Registers the migration that adds `unsignedFields` and `vcard` (shipped names are never edited).
    static func registerImportMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("v2-vcard-import") { db in
            try db.alter(table: "contact") { t in
                t.add(column: "unsignedFields", .text)
                t.add(column: "vcard", .text)
            }
        }
    }

    /// Imports unsigned cards in one transaction, rolled back when `dryRun`.
    ///
    /// A card merges into an existing *unsigned* contact that shares an email or phone (unless
    /// `merge` is false) and into the contact of its own key (a re-import), adding only what is
    /// missing. It merges into a *verified* contact only when it carries that contact's DID, and
    /// then its new values go to `unsignedFields`. Anything else is a new unsigned contact,
    /// flagged when its name, email or phone is a verified contact's.
    public func importUnsigned(_ cards: [UnsignedCard], merge: Bool, source: String, seen: Int64,
                               dryRun: Bool) throws(StoreError) -> [ImportOutcome] {
        do {
            return try pool.writeWithoutTransaction { db in
                var outcomes: [ImportOutcome] = []
                try db.inTransaction(.immediate) {
                    for c in cards { outcomes.append(try Self.importOne(c.contact, key: c.key, merge: merge, source: source, seen: seen, in: db)) }
                    return dryRun ? .rollback : .commit
                }
                return outcomes
            }
        } catch let e as StoreError { throw e } catch { throw .unavailable(Self.describe(error)) }
    }

    static func importOne(_ c: ImportedContact, key: String, merge: Bool, source: String, seen: Int64, in db: Database) throws -> ImportOutcome {
        // Cached statements: an import of thousands of cards would otherwise prepare (and
        // authorize) the same few statements for every card.
        let byDID = try db.cachedStatement(sql: "SELECT * FROM contact WHERE did = ?")
        if let did = c.did {
            if let verified = try Contact.fetchOne(byDID, arguments: [did]), verified.trust > .unsigned {
                return try mergeIntoVerified(verified, c, seen: seen, in: db)
            }
        }
        if let same = try Contact.fetchOne(byDID, arguments: [key]) {
            return try mergeIntoUnsigned(same, c, seen: seen, in: db)
        }
        if merge, let target = try unsignedMatch(for: c, in: db) {
            return try mergeIntoUnsigned(target, c, seen: seen, in: db)
        }
        var contact = Contact(did: key, fields: c.fields, level: .public, trust: .unsigned, source: source, seen: seen,
                              cardTimestamp: c.revision ?? seen)
        contact.vcard = c.extras.json
        // The key is new (checked above): insert as `store` would, without looking it up again.
        var conflicts = try Self.conflicts(for: contact, in: db)
        var added = contact
        added.conflictsWith = conflicts.isEmpty ? nil : conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
        try added.insert(db)
        try replaceValues(of: added, in: db)
        // The impersonation rule also covers a verified contact's phone number.
        let known = Set(conflicts.compactMap(\.id))
        let phones = (c.fields["phone"] ?? []).map { Contact.normalized("phone", $0) }
        if !phones.isEmpty {
            let ids = try Int64.fetchAll(db.cachedStatement(sql: """
                SELECT DISTINCT c.id FROM contact_value v JOIN contact c ON c.id = v.contactId
                WHERE v.field = 'phone' AND v.normalized IN (\(databaseQuestionMarks(count: phones.count)))
                  AND c.trust != 'unsigned' AND c.id != ?
                """), arguments: StatementArguments(phones + [added.id!]))
            let extra = ids.filter { !known.contains($0) }
            if !extra.isEmpty {
                conflicts += try Contact.filter(keys: extra).fetchAll(db)
                conflicts.sort { ($0.id ?? 0) < ($1.id ?? 0) }
                added.conflictsWith = conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
                try added.update(db)
            }
        }
        return .imported(added, conflicts: conflicts)
    }

    /// The oldest unsigned contact sharing an email or phone with `c` (and claiming no other DID).
    static func unsignedMatch(for c: ImportedContact, in db: Database) throws -> Contact? {
        var values: [String] = []
        for field in ["email", "phone"] { values += (c.fields[field] ?? []).map { Contact.normalized(field, $0) } }
        guard !values.isEmpty else { return nil }
        let found = try Contact.fetchAll(db.cachedStatement(sql: """
            SELECT * FROM contact WHERE trust = 'unsigned' AND id IN (
              SELECT contactId FROM contact_value WHERE field IN ('email', 'phone')
              AND normalized IN (\(databaseQuestionMarks(count: values.count)))) ORDER BY id LIMIT 10
            """), arguments: StatementArguments(values))
        return found.first { other in
            guard let did = c.did, other.did.hasPrefix("unsigned:did:") else { return true }
            return other.did == "unsigned:" + did
        }
    }

    /// Values of `incoming` missing from `existing` (compared as emails and phones compare).
    static func missing(_ incoming: [String: [String]], from existing: [[String: [String]]]) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for (field, values) in incoming {
            let have = Set(existing.flatMap { $0[field] ?? [] }.map { Contact.normalized(field, $0) })
            if FieldName.multiValued.contains(field) {
                var seen = have
                for v in values where !seen.contains(Contact.normalized(field, v)) {
                    seen.insert(Contact.normalized(field, v))
                    out[field, default: []].append(v)
                }
            } else if have.isEmpty, let v = values.first {
                out[field] = [v]
            }
        }
        return out
    }

    static func mergeIntoUnsigned(_ target: Contact, _ c: ImportedContact, seen: Int64, in db: Database) throws -> ImportOutcome {
        var updated = target
        let added = missing(c.fields, from: [target.fields])
        for (field, values) in added { updated.fields[field, default: []] += values }
        var extras = VCardExtras(json: target.vcard)
        let before = extras
        extras.merge(c.extras)
        updated.vcard = extras.json
        updated.lastSeen = max(target.lastSeen, seen)
        updated.name = updated.fields["name"]?.first
        updated.org = updated.fields["org"]?.first
        if let r = c.revision { updated.cardTimestamp = max(target.cardTimestamp, r) }
        try updated.update(db)
        guard !added.isEmpty || extras != before else { return .unchanged(updated) }
        try replaceValues(of: updated, in: db)
        return .merged(updated, added: added)
    }

    static func mergeIntoVerified(_ target: Contact, _ c: ImportedContact, seen: Int64, in db: Database) throws -> ImportOutcome {
        var updated = target
        let added = missing(c.fields, from: [target.fields, target.unsignedFields ?? [:]])
        var unsigned = target.unsignedFields ?? [:]
        for (field, values) in added { unsigned[field, default: []] += values }
        updated.unsignedFields = unsigned.isEmpty ? nil : unsigned
        var extras = VCardExtras(json: target.vcard)
        let before = extras
        extras.merge(c.extras)
        updated.vcard = extras.json
        updated.lastSeen = max(target.lastSeen, seen)
        try updated.update(db)
        return added.isEmpty && extras == before ? .unchanged(updated) : .merged(updated, added: added)
    }
}
