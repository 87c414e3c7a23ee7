import Foundation
import GRDB
import MeishiCard

/// An unsigned card to import, with the key it is stored under when it becomes a new contact:
/// `unsigned:` and the DID it claims, or a digest of its name, email and phone (never a
/// verified DID, so an unsigned card never lands on one).
public struct UnsignedCard: Sendable {
    public var contact: ImportedContact
    public var key: String
    /// The card as it arrived (a QR code's text), kept as a new contact's `payload`.
    public var raw: [UInt8]?

    public init(_ contact: ImportedContact, key: String, raw: [UInt8]? = nil) {
        precondition(key.hasPrefix("unsigned:"))
        self.contact = contact
        self.key = key
        self.raw = raw
    }
}

/// What importing one unsigned card (a vCard or MECARD) did.
public enum ImportOutcome: Equatable, Sendable {
    /// Stored as a new unsigned contact; `conflicts` are verified or other contacts it may impersonate.
    case imported(Contact, conflicts: [Contact])
    /// Added what was missing to an existing contact: `added` per field. Into a verified contact
    /// (its DID in `X-MEISHI-DID`) the values land in `unsignedFields`, apart from the signed ones.
    case merged(Contact, added: [FieldName: [String]])
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
        let outcomes: [ImportOutcome]
        do {
            outcomes = try pool.writeWithoutTransaction { db in
                var outcomes: [ImportOutcome] = []
                try db.inTransaction(.immediate) {
                    for c in cards { outcomes.append(try Self.importOne(c, merge: merge, source: source, seen: seen, in: db)) }
                    return dryRun ? .rollback : .commit
                }
                return outcomes
            }
        } catch let e as StoreError { throw e } catch { throw .unavailable(Self.describe(error)) }
        if !dryRun { emptyLog() }
        return outcomes
    }

    static func importOne(_ card: UnsignedCard, merge: Bool, source: String, seen: Int64, in db: Database) throws -> ImportOutcome {
        let c = card.contact, key = card.key
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
                              cardTimestamp: c.revision ?? seen, payload: card.raw.map { Data($0) })
        contact.vcard = c.extras.json
        // The key is new (checked above): insert as `store` would, without looking it up again.
        try refuseNUL(contact)
        var (added, conflicts) = try insertNew(contact, in: db)
        // The impersonation rule also covers a verified contact's phone number.
        let known = Set(conflicts.compactMap(\.id))
        let extra = try ids(sharing: .phone, with: added, verifiedOnly: true, in: db).filter { !known.contains($0) }
        if !extra.isEmpty {
            conflicts += try Contact.filter(keys: extra).fetchAll(db)
            conflicts.sort { ($0.id ?? 0) < ($1.id ?? 0) }
            added.conflictsWith = conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
            try added.update(db)
        }
        return .imported(added, conflicts: conflicts)
    }

    /// The oldest unsigned contact sharing an email or phone with `c` (and claiming no other DID).
    static func unsignedMatch(for c: ImportedContact, in db: Database) throws -> Contact? {
        let values = [FieldName.email, .phone].flatMap { f in (c.fields[f] ?? []).map { Contact.normalized(f, $0) } }
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
    static func missing(_ incoming: [FieldName: [String]], from existing: [[FieldName: [String]]]) -> [FieldName: [String]] {
        var out: [FieldName: [String]] = [:]
        for (field, values) in incoming {
            let have = Set(existing.flatMap { $0[field] ?? [] }.map { Contact.normalized(field, $0) })
            if field.isMultiValued {
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
        updated.name = updated.fields[.name]?.first
        updated.org = updated.fields[.org]?.first
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
