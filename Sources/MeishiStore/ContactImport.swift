import Foundation
import GRDB
import MeishiCard
import MeishiText

/// An unsigned card to import, with the key it is stored under when it becomes a new contact:
/// a digest of the card itself (`ContactImport.key`: its fields, the properties kept beside them,
/// its UID and claimed DID), by which importing the same card again finds it; or `unsigned:` and
/// the DID it claims when no contact claims it yet. Never a verified DID, so an unsigned card
/// never lands on one.
public struct UnsignedCard: Sendable {
    public var contact: ImportedContact
    public var key: String
    /// The key versions before 0.7 stored the same card under (a digest of its name, first email
    /// and first phone), so that a card imported then is still found "unchanged".
    public var formerKey: String?
    /// The card as it arrived (a QR code's text), kept as a new contact's `payload`.
    public var raw: [UInt8]?

    public init(_ contact: ImportedContact, key: String, formerKey: String? = nil, raw: [UInt8]? = nil) {
        precondition(key.hasPrefix("unsigned:"))
        self.contact = contact
        self.key = key
        self.formerKey = formerKey
        self.raw = raw
    }
}

/// An email or phone an imported card shares with a stored contact of another name: the two are
/// kept apart (merging is for the same person only), and the import says so.
public struct SharedValue: Equatable, Sendable {
    public let field: FieldName
    /// The value as the imported card wrote it.
    public let value: String
    public let contactID: Int64
    public let contactName: String?
}

/// What importing one unsigned card (a vCard or MECARD) did.
public enum ImportOutcome: Equatable, Sendable {
    /// Stored as a new unsigned contact; `conflicts` are verified or other contacts it may
    /// impersonate, `sharing` the emails and phones it shares with unsigned contacts of another name.
    case imported(Contact, conflicts: [Contact], sharing: [SharedValue])
    /// Added what was missing to an existing contact: `added` per field. Into a verified contact
    /// (its DID in `X-MEISHI-DID`) the values land in `unsignedFields`, apart from the signed ones.
    case merged(Contact, added: [FieldName: [String]])
    /// An existing contact already holds everything the card holds.
    case unchanged(Contact)

    public var contact: Contact {
        switch self {
        case .imported(let c, _, _), .merged(let c, _), .unchanged(let c): c
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
    /// Imports unsigned cards in one transaction, rolled back when `dryRun`.
    ///
    /// A card merges into an existing *unsigned* contact of the same person (unless `merge` is
    /// false): the same name (by `NameSkeleton.folded`, as the impersonation check compares
    /// names) and a shared email or phone (or the same UID or claimed DID), adding only what is
    /// missing. The same card again is `unchanged`. A shared email or phone under another name
    /// keeps the two apart (`SharedValue`). It merges into a *verified* contact only when it
    /// carries that contact's DID and the same name, and then its new values go to
    /// `unsignedFields`. Each merge is recorded, so `split` can undo it. Anything else is a new
    /// unsigned contact, flagged when its name, email or phone (or DID) is a verified contact's.
    /// See `importOne` for the order of the decisions.
    ///
    /// Each card that added or merged something records a `meeting` (`import`, or `qr` for a
    /// scanned code) at `seen`; an unchanged one does not, so importing a file again adds none.
    public func importUnsigned(_ cards: [UnsignedCard], merge: Bool, source: ContactSource, seen: Int64, meeting: MeetingKind = .import,
                               event: String? = nil, dryRun: Bool) throws(StoreError) -> [ImportOutcome] {
        let outcomes: [ImportOutcome]
        do {
            outcomes = try pool.writeWithoutTransaction { db in
                var outcomes: [ImportOutcome] = []
                try db.inTransaction(.immediate) {
                    for c in cards {
                        let outcome = try Self.importOne(c, merge: merge, source: source, seen: seen, in: db)
                        if case .unchanged = outcome {} else {
                            try Self.record(Meeting(at: seen, how: meeting, event: event), on: outcome.contact.id!, in: db)
                        }
                        try Self.restoreOwnNotes(note: c.contact.ownNote, tags: c.contact.ownTags, on: outcome.contact.id!, in: db)
                        outcomes.append(outcome)
                    }
                    return dryRun ? .rollback : .commit
                }
                return outcomes
            }
        } catch let e as StoreError { throw e } catch { throw .unavailable(Self.describe(error)) }
        if !dryRun { emptyLog() }
        return outcomes
    }

    /// One card, decided in this order: (1) the same card was imported before (its key is a
    /// contact's, or a merge's not undone): unchanged; (2) it carries the DID of a verified
    /// contact: merged into it as unsigned information when the names agree, else kept apart
    /// (its claim dropped) and flagged; (3) a contact stored by an older version under the card's former key
    /// or its claimed DID already holds all of it: unchanged; (4) when `merge`, the same name and
    /// the same UID (the card edited elsewhere), or the same name and claimed DID, or the same
    /// name and a shared email or phone: merged; (5) else a new contact.
    static func importOne(_ card: UnsignedCard, merge: Bool, source: ContactSource, seen: Int64, in db: Database) throws -> ImportOutcome {
        let c = card.contact
        let skeleton = c.name.map(NameSkeleton.folded)
        // Cached statements: an import of thousands of cards would otherwise prepare (and
        // authorize) the same few statements for every card.
        let byDID = try db.cachedStatement(sql: "SELECT * FROM contact WHERE did = ?")
        // The same card again, standing alone (after a split too) or merged into a contact.
        if let same = try Contact.fetchOne(byDID, arguments: [card.key]) { return .unchanged(same) }
        let mergedBefore = try db.cachedStatement(sql: """
            SELECT c.* FROM import_merge m JOIN contact c ON c.id = m.contactId WHERE m.key = ? AND m.undoneAt IS NULL LIMIT 1
            """)
        if let same = try Contact.fetchOne(mergedBefore, arguments: [card.key]) { return .unchanged(same) }
        var claimed = c.did.map { "unsigned:" + $0 }
        var claimsVerified: Contact?
        if let did = c.did, let verified = try Contact.fetchOne(byDID, arguments: [did]), verified.trust > .unsigned {
            if skeleton != nil, verified.nameSkeleton == skeleton {
                return try mergeIntoVerified(verified, card, source: source, seen: seen, in: db)
            }
            claimsVerified = verified
            claimed = nil
        }
        for k in [card.formerKey, claimed].compactMap({ $0 }) {
            if let held = try Contact.fetchOne(byDID, arguments: [k]), held.trust == .unsigned, holdsAll(c, held) { return .unchanged(held) }
        }
        if merge {
            var candidates: [Contact] = []
            if let uid = c.uid, let u = try Contact.fetchOne(db.cachedStatement(sql: "SELECT * FROM contact WHERE uid = ?"), arguments: [uid]) {
                candidates.append(u)
            }
            if let k = claimed, let d = try Contact.fetchOne(byDID, arguments: [k]) { candidates.append(d) }
            if let same = candidates.first(where: { $0.trust == .unsigned && $0.nameSkeleton == skeleton }) {
                return try mergeIntoUnsigned(same, card, source: source, seen: seen, in: db)
            }
        }
        let (target, sharing) = try unsignedMatch(for: c, merging: merge, in: db)
        if let target { return try mergeIntoUnsigned(target, card, source: source, seen: seen, in: db) }
        // A card claiming a DID no contact holds yet is stored under it (exported with it again).
        var key = card.key
        if let k = claimed, try Contact.filter(Column("did") == k).fetchCount(db) == 0 { key = k }
        var contact = Contact(did: key, fields: c.fields, level: .public, trust: .unsigned, source: source, seen: seen,
                              cardTimestamp: c.revision ?? seen, payload: card.raw.map { Data($0) })
        contact.vcard = c.extras.json
        contact.uid = try freeUID(c.uid, key: key, in: db)
        // The key is new (checked above): insert as `store` would, without looking it up again.
        try refuseNUL(contact)
        var (added, conflicts) = try insertNew(contact, in: db)
        // The impersonation rule also covers a verified contact's phone number, and its DID.
        let known = Set(conflicts.compactMap(\.id))
        var extra = try ids(sharing: .phone, with: added, verifiedOnly: true, in: db).filter { !known.contains($0) }
        if let v = claimsVerified?.id, !known.contains(v), !extra.contains(v) { extra.insert(v, at: 0) }
        if !extra.isEmpty {
            conflicts += try Contact.filter(keys: extra).fetchAll(db)
            conflicts.sort { ($0.id ?? 0) < ($1.id ?? 0) }
            conflicts = Array(conflicts.prefix(maximumLookAlikes))
            added.conflictsWith = conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
            try added.update(db)
        }
        return .imported(added, conflicts: conflicts, sharing: sharing)
    }

    /// `uid` when no contact has it yet, else the `urn:uuid:` of `key` (two contacts never
    /// share a UID: a vdir names its files after it).
    static func freeUID(_ uid: String?, key: String, in db: Database) throws -> String {
        if let uid, try Contact.filter(Column("uid") == uid).fetchCount(db) == 0 { return uid }
        return Contact.uuidURN(key)
    }

    /// Whether `existing` is of the same name as `c` (folded; or neither has one) and holds every
    /// value of `c` (in its fields, earlier or unsigned ones) and every property kept beside them.
    static func holdsAll(_ c: ImportedContact, _ existing: Contact) -> Bool {
        let held = [existing.fields, existing.earlierFields ?? [:], existing.unsignedFields ?? [:]]
        return existing.nameSkeleton == c.name.map(NameSkeleton.folded) && missing(c.fields, from: held, everyValue: true).isEmpty
            && VCardExtras(json: existing.vcard).holds(c.extras)
    }

    /// Most shared values an import reports per card.
    static let sharedValuesReported = 3

    /// The oldest unsigned contact of the same person as `c` when `merging`: the same name (equal
    /// `NameSkeleton.folded` keys, the impersonation check's: case, width, look-alike letters and
    /// invisible characters aside; or no name on either), a shared email or phone, and no other
    /// DID claimed. Else the values `c` shares with unsigned contacts of another name, which stay
    /// apart.
    static func unsignedMatch(for c: ImportedContact, merging: Bool,
                              in db: Database) throws -> (Contact?, sharing: [SharedValue]) {
        let values = [FieldName.email, .phone].flatMap { f in (c.fields[f] ?? []).map { (f, $0, Contact.normalized(f, $0)) } }
        guard !values.isEmpty else { return (nil, []) }
        // The same name first, through the name's skeleton (an index), so that a common value (a
        // company's switchboard, shared by hundreds) never hides the one contact of the same name.
        let skeleton = c.name.map(NameSkeleton.folded)
        let candidates = """
            SELECT c.id, c.name, c.did, v.field, v.normalized FROM contact_value v JOIN contact c ON c.id = v.contactId
            WHERE c.trust = 'unsigned' AND v.field IN ('email', 'phone')
            AND v.normalized IN (\(databaseQuestionMarks(count: values.count)))
            """
        func claimsAnotherDID(_ row: Row) -> Bool {
            let did: String = row["did"]
            guard let claimed = c.did, did.hasPrefix("unsigned:did:") else { return false }
            return did != "unsigned:" + claimed
        }
        if merging {
            let same = try Row.fetchAll(db.cachedStatement(sql: candidates + " AND c.nameSkeleton IS ? ORDER BY c.id LIMIT 20"),
                                        arguments: StatementArguments(values.map(\.2) + [skeleton]))
            if let row = same.first(where: { !claimsAnotherDID($0) }) { return (try Contact.fetchOne(db, key: row["id"] as Int64), []) }
        }
        // Then a few of the contacts of other names sharing a value, to say so. Only their id,
        // name and DID: none of their cards needs decoding.
        let others = try Row.fetchAll(db.cachedStatement(sql: candidates + " AND c.nameSkeleton IS NOT ? ORDER BY c.id LIMIT 20"),
                                      arguments: StatementArguments(values.map(\.2) + [skeleton]))
        var sharing: [SharedValue] = []
        for row in others where !claimsAnotherDID(row) {
            let id: Int64 = row["id"], field: String = row["field"], normalized: String = row["normalized"]
            guard sharing.count < sharedValuesReported, !sharing.contains(where: { $0.contactID == id && $0.field.rawValue == field }),
                  let v = values.first(where: { $0.0.rawValue == field && $0.2 == normalized }) else { continue }
            sharing.append(SharedValue(field: v.0, value: v.1, contactID: id, contactName: row["name"]))
        }
        return (nil, sharing)
    }

    static func mergeIntoUnsigned(_ target: Contact, _ card: UnsignedCard, source: ContactSource, seen: Int64,
                                  in db: Database) throws -> ImportOutcome {
        let c = card.contact
        var updated = target
        let added = missing(c.fields, from: [target.fields], everyValue: true)
        for (field, values) in added { updated.fields[field, default: []] += values }
        var extras = VCardExtras(json: target.vcard)
        let before = extras
        extras.merge(c.extras)
        guard !added.isEmpty || extras != before else { return .unchanged(target) }
        updated.vcard = extras.json
        updated.lastSeen = max(target.lastSeen, seen)
        updated.name = updated.fields[.name]?.first
        updated.org = updated.fields[.org]?.first
        if let r = c.revision { updated.cardTimestamp = max(target.cardTimestamp, r) }
        try updated.update(db)
        try replaceValues(of: updated, in: db)
        try record(card, into: target, added: added, source: source, seen: seen, in: db)
        return .merged(updated, added: added)
    }

    /// Adds what `card` holds that a verified contact's card does not to its `unsignedFields`,
    /// apart from what its signature vouches for; recorded, so that `split` undoes it. The
    /// contact's last-seen time stays that of its last signed card.
    static func mergeIntoVerified(_ target: Contact, _ card: UnsignedCard, source: ContactSource, seen: Int64,
                                  in db: Database) throws -> ImportOutcome {
        let c = card.contact
        var updated = target
        let added = missing(c.fields, from: [target.fields, target.earlierFields ?? [:], target.unsignedFields ?? [:]], everyValue: true)
        var unsigned = target.unsignedFields ?? [:]
        for (field, values) in added { unsigned[field, default: []] += values }
        updated.unsignedFields = unsigned.isEmpty ? nil : unsigned
        var extras = VCardExtras(json: target.vcard)
        let before = extras
        extras.merge(c.extras)
        guard !added.isEmpty || extras != before else { return .unchanged(target) }
        updated.vcard = extras.json
        try updated.update(db)
        try record(card, into: target, added: added, source: source, seen: seen, in: db)
        return .merged(updated, added: added)
    }

    static func record(_ card: UnsignedCard, into target: Contact, added: [FieldName: [String]], source: ContactSource, seen: Int64,
                       in db: Database) throws {
        var record = ImportMerge(contactID: target.id!, at: seen, source: source, key: card.key, fields: card.contact.fields,
                                 extras: card.contact.extras.json, added: added, extrasBefore: target.vcard,
                                 cardTimestampBefore: target.cardTimestamp, uid: card.contact.uid)
        try record.insert(db)
    }
}
