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

    init(contactID: Int64, at: Int64, source: ContactSource, key: String, fields: [FieldName: [String]], extras: String?,
         added: [FieldName: [String]], extrasBefore: String?, cardTimestampBefore: Int64) {
        self.contactID = contactID
        self.at = at
        self.source = source
        self.key = key
        self.fields = fields
        self.extras = extras
        self.added = added
        self.extrasBefore = extrasBefore
        self.cardTimestampBefore = cardTimestampBefore
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

extension ContactStore {
    /// Undoes the latest recorded merge into the contact `ref` names: the values that merge added
    /// leave it, its vCard extras are as before the merge, and the card that merged is stored
    /// again as a contact of its own (flagged, as any import, when it shares a name or email).
    /// Merges are undone newest first; one made before merges were recorded cannot be, and
    /// `StoreError.noRecordedMerge` says so.
    public func split(_ ref: String) throws(StoreError) -> SplitOutcome {
        let outcome = try write { db in
            let target = try Self.resolve(ref, in: db)
            guard let merge = try ImportMerge.filter(Column("contactId") == target.id!).order(Column("id").desc).fetchOne(db) else {
                throw StoreError.noRecordedMerge(id: target.id!, name: target.name)
            }
            var remaining = target
            for (field, values) in merge.added {
                var left = remaining.fields[field] ?? []
                for v in values {
                    if let i = left.firstIndex(where: { Contact.normalized(field, $0) == Contact.normalized(field, v) }) { left.remove(at: i) }
                }
                remaining.fields[field] = left.isEmpty ? nil : left
            }
            remaining.name = remaining.fields[.name]?.first
            remaining.org = remaining.fields[.org]?.first
            remaining.vcard = merge.extrasBefore
            remaining.cardTimestamp = merge.cardTimestampBefore
            try remaining.update(db)
            try Self.replaceValues(of: remaining, in: db)
            _ = try ImportMerge.deleteOne(db, key: merge.id)

            var key = merge.key
            if try Contact.filter(Column("did") == key).fetchCount(db) > 0 { key += "-split\(merge.id!)" }
            var card = Contact(did: key, fields: merge.fields, level: .public, trust: .unsigned, source: merge.source,
                               seen: merge.at, cardTimestamp: merge.at)
            card.vcard = merge.extras
            try Self.refuseNUL(card)
            let (separated, _) = try Self.insertNew(card, in: db)
            let left = try ImportMerge.filter(Column("contactId") == target.id!).fetchCount(db)
            // The remaining contact was read before the newcomer was stored: read it again, with its look-alike marks.
            let reread = try Contact.fetchOne(db, key: target.id!) ?? remaining
            return SplitOutcome(remaining: reread, separated: separated, removed: merge.added, mergesLeft: left)
        }
        emptyLog()
        return outcome
    }
}
