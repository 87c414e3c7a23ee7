import Foundation
import GRDB
import MeishiCard

/// One signed card a contact sent, kept as it arrived (migration `v5-card-history`): a newer
/// card that discloses less never erases what an older one disclosed.
public struct ReceivedCard: Equatable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "contact_card"
    public var id: Int64?
    public var contactID: Int64
    /// The signed card exactly as it arrived (the JSON payload or the QR text).
    public var payload: Data
    /// How it came: `exchange`, `qr`, `file`, `stdin`.
    public var source: ContactSource
    public var trust: Trust
    /// When it was stored (Unix seconds); for the cards a store held before the history was
    /// kept, the contact's last-seen time, which is when that card or a copy of it last came.
    public var received: Int64
    /// The card's signed timestamp, its level and its fields.
    public var cardTimestamp: Int64
    public var level: DisclosureLevel
    public var fields: [FieldName: [String]]

    init(contactID: Int64, _ c: Contact) {
        self.contactID = contactID
        payload = c.payload ?? Data()
        source = c.source
        trust = c.trust
        received = c.lastSeen
        cardTimestamp = c.cardTimestamp
        level = c.level
        fields = c.fields
    }

    public init(row: Row) throws {
        id = row["id"]
        contactID = row["contactId"]
        payload = row["payload"]
        received = row["received"]
        cardTimestamp = row["cardTimestamp"]
        let damaged = { (why: String) in StoreError.damaged("card #\(row["id"] as Int64? ?? 0) of contact #\(row["contactId"] as Int64? ?? 0): \(why)") }
        guard let s = (row["source"] as String?).flatMap(ContactSource.init(rawValue:)) else { throw damaged("unknown source") }
        source = s
        guard let t = (row["trust"] as String?).flatMap(Trust.init(rawValue:)) else { throw damaged("unknown trust") }
        trust = t
        guard let l = (row["level"] as String?).flatMap(DisclosureLevel.init(rawValue:)) else { throw damaged("unknown level") }
        level = l
        guard let f = (row["fields"] as String?).flatMap(FieldsColumn.decode) else { throw damaged("the fields column is not valid") }
        fields = f
    }

    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["contactId"] = contactID
        container["payload"] = payload
        container["source"] = source
        container["trust"] = trust
        container["received"] = received
        container["cardTimestamp"] = cardTimestamp
        container["level"] = level
        container["fields"] = FieldsColumn.encode(fields)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What earlier cards said that the current one does not, grouped by the newest card that said it.
public struct EarlierValues: Equatable, Sendable {
    public let card: ReceivedCard
    public let fields: [FieldName: [String]]
}

/// One difference between the card a contact held and the newer card that replaced it.
public enum FieldChange: Equatable, Sendable {
    /// Values of the field the older card did not have (`count` of them).
    case added(FieldName, count: Int)
    /// A single-valued field holds another value.
    case changed(FieldName)
    /// Values of the field the newer card no longer shares; `all` when it shares none of it.
    case withdrawn(FieldName, count: Int, all: Bool)
    /// The card is shared at another level.
    case level(from: DisclosureLevel, to: DisclosureLevel)

    /// The changes from `old` (fields and level) to `new`, in field order.
    public static func between(_ old: [FieldName: [String]], _ oldLevel: DisclosureLevel,
                               and new: [FieldName: [String]], _ newLevel: DisclosureLevel) -> [FieldChange] {
        var out: [FieldChange] = []
        for field in Set(old.keys).union(new.keys).sorted() {
            let before = (old[field] ?? []).map { Contact.normalized(field, $0) }, after = (new[field] ?? []).map { Contact.normalized(field, $0) }
            if !field.isMultiValued {
                switch (before.first, after.first) {
                case (nil, _?): out.append(.added(field, count: 1))
                case (_?, nil): out.append(.withdrawn(field, count: 1, all: true))
                case (let b?, let a?) where a != b: out.append(.changed(field))
                default: break
                }
                continue
            }
            let added = after.filter { !before.contains($0) }.count, gone = before.filter { !after.contains($0) }.count
            if added > 0 { out.append(.added(field, count: added)) }
            if gone > 0 { out.append(.withdrawn(field, count: gone, all: after.isEmpty)) }
        }
        if oldLevel != newLevel { out.append(.level(from: oldLevel, to: newLevel)) }
        return out
    }
}

extension ContactStore {
    /// The signed cards the contact `id` sent, newest first (by signed timestamp).
    public func history(of id: Int64) throws(StoreError) -> [ReceivedCard] {
        try read { db in try Self.history(of: id, in: db) }
    }

    static func history(of id: Int64, in db: Database) throws -> [ReceivedCard] {
        try ReceivedCard.filter(Column("contactId") == id).order(Column("cardTimestamp").desc, Column("id").desc).fetchAll(db)
    }

    /// What the contact's earlier cards said that its current card does not, newest card first:
    /// multi-valued fields' values the current card lacks, single-valued fields it lacks
    /// altogether (an older title is out of date, not withheld).
    public func earlierValues(of contact: Contact) throws(StoreError) -> [EarlierValues] {
        guard let id = contact.id else { return [] }
        return try read { db in
            let history = try Self.history(of: id, in: db)
            return Self.earlierValues(of: contact, history: history)
        }
    }

    static func earlierValues(of contact: Contact, history: [ReceivedCard]) -> [EarlierValues] {
        var have: [FieldName: Set<String>] = [:]
        for (f, values) in contact.fields { have[f] = Set(values.map { Contact.normalized(f, $0) }) }
        var out: [EarlierValues] = []
        for card in history where !(card.cardTimestamp == contact.cardTimestamp && card.payload == contact.payload) {
            var found: [FieldName: [String]] = [:]
            for field in card.fields.keys.sorted() {
                if !field.isMultiValued, have[field] != nil { continue }
                for v in card.fields[field]! where !(have[field]?.contains(Contact.normalized(field, v)) ?? false) {
                    found[field, default: []].append(v)
                    have[field, default: []].insert(Contact.normalized(field, v))
                }
            }
            if !found.isEmpty { out.append(EarlierValues(card: card, fields: found)) }
        }
        return out
    }

    /// Keeps the signed cards of `received` in the history of `contact` (once per card: the same
    /// bytes again are not kept twice) and refreshes the contact's `earlierFields` from it.
    static func keepCards(_ received: [Contact], of contact: inout Contact, in db: Database) throws {
        guard let id = contact.id else { return }
        for incoming in received where incoming.trust > .unsigned {
            guard let payload = incoming.payload else { continue }
            let known = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM contact_card WHERE contactId = ? AND payload = ?)"),
                                          arguments: [id, payload]) ?? false
            if !known {
                var card = ReceivedCard(contactID: id, incoming)
                try card.insert(db)
            }
        }
        let cards = try history(of: id, in: db)
        let earlier = earlierValues(of: contact, history: cards)
        var union: [FieldName: [String]] = [:]
        for group in earlier { for (f, values) in group.fields { union[f, default: []] += values } }
        contact.earlierFields = union.isEmpty ? nil : union
    }
}
