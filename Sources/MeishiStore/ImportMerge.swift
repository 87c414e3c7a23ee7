import Foundation
import GRDB
import MeishiCard

/// One imported card merged into an existing unsigned contact, recorded so that `split` can
/// take it out again (migration `v5-import-merges`; merges made before it were not recorded).
struct ImportMerge: MutablePersistableRecord, FetchableRecord {
    static let databaseTableName = "import_merge"
    var id: Int64?
    var contactID: Int64
    /// When the card was imported (Unix seconds) and from where (`vcard`, `stdin`, `qr-vcard`…).
    var at: Int64
    var source: ContactSource
    /// The key the card is stored under when it stands alone (`UnsignedCard.key`).
    var key: String
    /// The card's fields and vCard extras (JSON) as imported.
    var fields: [FieldName: [String]]
    var extras: String?
    /// What the merge added to the contact, and the contact's extras and timestamp before it.
    var added: [FieldName: [String]]
    var extrasBefore: String?
    var cardTimestampBefore: Int64
    /// The card's vCard `UID`, which it takes again when `split` (migration `v9-import-uid`).
    var uid: String?
    /// When `split` undid it (kept, so split can tell "all undone" from "never merged").
    var undoneAt: Int64?

    init(contactID: Int64, at: Int64, source: ContactSource, key: String, fields: [FieldName: [String]], extras: String?,
         added: [FieldName: [String]], extrasBefore: String?, cardTimestampBefore: Int64, uid: String?) {
        self.contactID = contactID
        self.at = at
        self.source = source
        self.key = key
        self.fields = fields
        self.extras = extras
        self.added = added
        self.extrasBefore = extrasBefore
        self.cardTimestampBefore = cardTimestampBefore
        self.uid = uid
    }

    init(row: Row) throws {
        id = row["id"]
        contactID = row["contactId"]
        at = row["at"]
        guard let s = (row["source"] as String?).flatMap(ContactSource.init(rawValue:)) else {
            throw StoreError.damaged("merge record #\(id ?? 0): unknown source")
        }
        source = s
        key = row["key"]
        guard let f = FieldsColumn.decode(row["fields"]), let a = FieldsColumn.decode(row["added"]) else {
            throw StoreError.damaged("merge record #\(id ?? 0): the fields column is not valid")
        }
        fields = f
        added = a
        extras = row["extras"]
        extrasBefore = row["extrasBefore"]
        cardTimestampBefore = row["cardTimestampBefore"]
        uid = row["uid"]
        undoneAt = row["undoneAt"]
    }

    func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["contactId"] = contactID
        container["at"] = at
        container["source"] = source
        container["key"] = key
        container["fields"] = FieldsColumn.encode(fields)
        container["extras"] = extras
        container["added"] = FieldsColumn.encode(added)
        container["extrasBefore"] = extrasBefore
        container["cardTimestampBefore"] = cardTimestampBefore
        container["uid"] = uid
        container["undoneAt"] = undoneAt
    }

    mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What `split` did: the contact a merge was undone on, and the card it joined, standing alone again.
public struct SplitOutcome: Equatable, Sendable {
    public let remaining: Contact
    public let separated: Contact
    /// The values taken out of `remaining` (they are `separated`'s).
    public let removed: [FieldName: [String]]
    /// Merges into `remaining` still recorded after this one was undone.
    public let mergesLeft: Int
}

/// Why `split` found nothing to undo (`StoreError.nothingToSplit`).
public enum NothingToSplit: Equatable, Sendable {
    /// Nothing was ever merged into the contact: a signed contact holding no unsigned
    /// information, or an unsigned one no import changed after the one that made it.
    case neverMerged
    /// Every recorded merge into it was undone already (`count` of them).
    case allUndone(count: Int)
    /// No merge into it is recorded, but an older version (before merges were recorded, migration
    /// `v5-import-merges`) may have merged into it: an unsigned contact an import touched after
    /// it was made, or a signed contact holding unsigned information. Which values came from
    /// which card is not known.
    case unrecorded
}

extension ContactStore {
    /// Undoes the latest recorded merge into the contact `ref` names: the values that merge added
    /// leave it (its fields, or a signed contact's `unsignedFields`), its vCard extras are as
    /// before the merge, and the card that merged is stored again as a contact of its own
    /// (flagged, as any import, when it shares a name or email). Merges are undone newest first,
    /// each marked undone; with none left `StoreError.nothingToSplit` says why.
    public func split(_ ref: String, now: Int64) throws(StoreError) -> SplitOutcome {
        let outcome = try write { db in
            let target = try Self.resolve(ref, in: db)
            let merges = ImportMerge.filter(Column("contactId") == target.id!)
            guard let merge = try merges.filter(Column("undoneAt") == nil).order(Column("id").desc).fetchOne(db) else {
                let undone = try merges.fetchCount(db)
                let why: NothingToSplit = undone > 0 ? .allUndone(count: undone)
                    : (target.trust > .unsigned ? target.unsignedFields != nil : target.lastSeen > target.firstSeen) ? .unrecorded
                    : .neverMerged
                throw StoreError.nothingToSplit(id: target.id!, name: target.name, why)
            }
            var remaining = target
            var values = target.trust > .unsigned ? target.unsignedFields ?? [:] : target.fields
            for (field, taken) in merge.added {
                var left = values[field] ?? []
                for v in taken {
                    if let i = left.firstIndex(where: { Contact.normalized(field, $0) == Contact.normalized(field, v) }) { left.remove(at: i) }
                }
                values[field] = left.isEmpty ? nil : left
            }
            if target.trust > .unsigned {
                remaining.unsignedFields = values.isEmpty ? nil : values
            } else {
                remaining.fields = values
                remaining.name = remaining.fields[.name]?.first
                remaining.org = remaining.fields[.org]?.first
                remaining.cardTimestamp = merge.cardTimestampBefore
            }
            remaining.vcard = merge.extrasBefore
            try remaining.update(db)
            try Self.replaceValues(of: remaining, in: db)
            try db.execute(sql: "UPDATE import_merge SET undoneAt = ? WHERE id = ?", arguments: [now, merge.id])

            var key = merge.key
            if try Contact.filter(Column("did") == key).fetchCount(db) > 0 { key += "-split\(merge.id!)" }
            var card = Contact(did: key, fields: merge.fields, level: .public, trust: .unsigned, source: merge.source,
                               seen: merge.at, cardTimestamp: merge.at)
            card.vcard = merge.extras
            card.uid = try Self.freeUID(merge.uid, key: key, in: db)
            try Self.refuseNUL(card)
            let (separated, _) = try Self.insertNew(card, in: db)
            let left = try merges.filter(Column("undoneAt") == nil).fetchCount(db)
            // The remaining contact was read before the newcomer was stored: read it again, with its look-alike marks.
            let reread = try Contact.fetchOne(db, key: target.id!) ?? remaining
            return SplitOutcome(remaining: reread, separated: separated, removed: merge.added, mergesLeft: left)
        }
        emptyLog()
        return outcome
    }
}
