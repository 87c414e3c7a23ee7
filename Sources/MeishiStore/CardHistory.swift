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
    /// How it came: `exchange`, `qr`, `file`, `stdin`, `solidarity` (as `Contact.source`).
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
        let card = try CardColumns(row: row, damaged: damaged)
        (fields, level, trust) = (card.fields, card.level, card.trust)
        guard let s = (row["source"] as String?).flatMap(ContactSource.init(rawValue:)) else { throw damaged("unknown source") }
        source = s
    }

    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["contactId"] = contactID
        container["payload"] = payload
        container["source"] = source
        container["received"] = received
        container["cardTimestamp"] = cardTimestamp
        CardColumns(fields: fields, level: level, trust: trust).encode(to: &container)
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What earlier cards said that the current one does not, grouped by the newest card that said it.
public struct EarlierValues: Equatable, Sendable {
    public let card: ReceivedCard
    public let fields: [FieldName: [String]]
}

extension ContactStore {
    /// How the contact was first seen: the source of the first card its history holds (a push
    /// replaces `source`, the latest card's, never this), else `source`.
    public func firstSource(of c: Contact) throws(StoreError) -> ContactSource {
        guard let id = c.id else { return c.source }
        return try read { db in
            let first = try String.fetchOne(db, sql: "SELECT source FROM contact_card WHERE contactId = ? ORDER BY received, id LIMIT 1",
                                            arguments: [id])
            return first.flatMap(ContactSource.init(rawValue:)) ?? c.source
        }
    }

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
        var out: [EarlierValues] = []
        for card in history where !(card.cardTimestamp == contact.cardTimestamp && card.payload == contact.payload) {
            // What neither the current card nor a newer earlier card already says.
            let found = missing(card.fields, from: [contact.fields] + out.map(\.fields), everyValue: false)
            if !found.isEmpty { out.append(EarlierValues(card: card, fields: found)) }
        }
        return out
    }

    /// Most signed cards kept in one contact's history: the first one received (how the contact
    /// was first seen) and the newest others. A contact pushing card after card cannot grow the
    /// store without bound (trial 7, F18).
    public static let maximumHistoryPerContact = 50

    /// Keeps the signed cards of `received` in the history of `contact` (once per card: the same
    /// bytes again are not kept twice, nor the same fields under the same key signed again as the
    /// newest kept card), within `maximumHistoryPerContact`, and refreshes the contact's
    /// `earlierFields` from it.
    static func keepCards(_ received: [Contact], of contact: inout Contact, in db: Database) throws {
        guard let id = contact.id else { return }
        for incoming in received where incoming.trust > .unsigned {
            guard let payload = incoming.payload else { continue }
            let known = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS(SELECT 1 FROM contact_card WHERE contactId = ? AND payload = ?)"),
                                          arguments: [id, payload]) ?? false
            if known { continue }
            if let newest = try ReceivedCard.filter(Column("contactId") == id).order(Column("cardTimestamp").desc, Column("id").desc).fetchOne(db),
               newest.cardTimestamp <= incoming.cardTimestamp,
               newest.fields == incoming.fields, newest.level == incoming.level, newest.trust == incoming.trust,
               signer(of: newest.payload) == signer(of: payload) {
                continue  // the same card signed again: nothing to keep
            }
            var card = ReceivedCard(contactID: id, incoming)
            try card.insert(db)
        }
        try db.execute(sql: """
            DELETE FROM contact_card WHERE contactId = ?1
                AND id NOT IN (SELECT id FROM contact_card WHERE contactId = ?1 ORDER BY received, id LIMIT 1)
                AND id NOT IN (SELECT id FROM contact_card WHERE contactId = ?1 ORDER BY cardTimestamp DESC, id DESC LIMIT ?2)
            """, arguments: [id, maximumHistoryPerContact - 1])
        let cards = try history(of: id, in: db)
        let earlier = earlierValues(of: contact, history: cards)
        var union: [FieldName: [String]] = [:]
        for group in earlier { for (f, values) in group.fields { union[f, default: []] += values } }
        contact.earlierFields = union.isEmpty ? nil : union
    }

    /// The DID that signed a stored card (JSON payload or QR text), nil when it cannot be read.
    static func signer(of payload: Data) -> String? {
        if let text = String(data: payload, encoding: .utf8), text.hasPrefix(CardQRText.prefix) {
            return try? CardQRText.decode(text).senderDID
        }
        return try? ProximityPayload.parse(Array(payload)).senderDID
    }
}
