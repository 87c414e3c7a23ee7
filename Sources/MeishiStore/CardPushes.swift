import Foundation
import GRDB
import MeishiCard

/// One card of mine `card push` delivered (migration `v8-card-pushes`).
public struct CardPush: Equatable, Sendable {
    public var contactID: Int64
    public var at: Int64
    public var level: DisclosureLevel
    public var cardTimestamp: Int64

    public init(contactID: Int64, at: Int64, level: DisclosureLevel, cardTimestamp: Int64) {
        self.contactID = contactID
        self.at = at
        self.level = level
        self.cardTimestamp = cardTimestamp
    }
}

/// One card a contact sent that replaced an earlier one (`contacts changes`): when it came, how,
/// and what changed from the card before it.
public struct ReceivedChange: Equatable, Sendable {
    public let contact: Contact
    public let card: ReceivedCard
    public let changes: [FieldChange]
    /// The name on the card this one followed, when this one carries another.
    public let previousName: String?

    /// The name on this card (the contact's name then), else the contact's.
    public var name: String? { card.fields[.name]?.first ?? contact.name }
}

extension ContactStore {
    /// The contacts that hold a card of mine and can be pushed a newer one: met at an exchange
    /// (those recorded before meetings were, by `v6-meetings`, too) or given one by an earlier
    /// push; signed or met, with a message key; by name.
    public func pushTargets() throws(StoreError) -> [Contact] {
        try read { db in
            try Contact.fetchAll(db, sql: """
                SELECT * FROM contact WHERE trust != 'unsigned' AND pubKey IS NOT NULL
                AND (id IN (SELECT contactId FROM meeting WHERE gave IS NOT NULL OR how IN ('exchange', 'code', 'table', 'relay'))
                     OR id IN (SELECT contactId FROM card_push))
                ORDER BY name COLLATE NOCASE, id
                """)
        }
    }

    /// The level of my card the contact last received (at an exchange or by a push); nil when
    /// it never received one.
    public func lastGivenLevel(to contactID: Int64) throws(StoreError) -> DisclosureLevel? {
        try read { db in
            let raw = try String.fetchOne(db, sql: """
                SELECT level FROM (SELECT at, id, gave AS level, 0 AS kind FROM meeting WHERE contactId = ? AND gave IS NOT NULL
                                   UNION ALL SELECT at, id, level, 1 AS kind FROM card_push WHERE contactId = ?)
                ORDER BY at DESC, kind DESC, id DESC LIMIT 1
                """, arguments: [contactID, contactID])
            return raw.flatMap(DisclosureLevel.init(rawValue:))
        }
    }

    /// Whether the contact received a card of mine (at an exchange or by a push) at or after `time`.
    public func gaveCard(to contactID: Int64, since time: Int64) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS (SELECT 1 FROM meeting WHERE contactId = ? AND gave IS NOT NULL AND at >= ?)
                    OR EXISTS (SELECT 1 FROM card_push WHERE contactId = ? AND at >= ?)
                """, arguments: [contactID, time, contactID, time]) ?? false
        }
    }

    /// The newest time a card of mine was given to anyone (signed for a push, or at a meeting);
    /// nil before the first. A push signs later than it: a contact takes only a newer card.
    public func latestCardGiven() throws(StoreError) -> Int64? {
        try read { db in
            try Int64.fetchOne(db, sql: """
                SELECT MAX(t) FROM (SELECT MAX(cardTimestamp) AS t FROM card_push
                                    UNION ALL SELECT MAX(at) AS t FROM meeting WHERE gave IS NOT NULL)
                """)
        }
    }

    /// Records a delivered push.
    public func record(_ push: CardPush) throws(StoreError) {
        try write { db in
            try db.execute(sql: "INSERT INTO card_push (contactId, at, level, cardTimestamp) VALUES (?, ?, ?, ?)",
                           arguments: [push.contactID, push.at, push.level.rawValue, push.cardTimestamp])
        }
    }

    /// Every received card that replaced an earlier one of the same contact (by signed time) and
    /// changed something (a card signed again as it was is left out), received at or after `since`, of the contact `contactID` only when given; newest first.
    public func receivedChanges(of contactID: Int64? = nil, since: Int64 = 0) throws(StoreError) -> [ReceivedChange] {
        try read { db in
            let ids = try contactID.map { [$0] } ?? Int64.fetchAll(db, sql: """
                SELECT DISTINCT contactId FROM contact_card WHERE received >= ? ORDER BY contactId
                """, arguments: [since])
            var out: [ReceivedChange] = []
            for id in ids {
                guard let contact = try Contact.fetchOne(db, key: id) else { continue }
                // Oldest first by signed time: each card against the one before it.
                let cards = try Self.history(of: id, in: db).reversed()
                var previous: ReceivedCard?
                for card in cards {
                    defer { previous = card }
                    guard let before = previous, card.received >= since, card.cardTimestamp > before.cardTimestamp else { continue }
                    let changes = FieldChange.between(before.fields, before.level, and: card.fields, card.level)
                    // The same card signed again (a push repeated) changes nothing: no row of its own.
                    guard !changes.isEmpty else { continue }
                    let previousName = before.fields[.name]?.first
                    out.append(ReceivedChange(contact: contact, card: card, changes: changes,
                                              previousName: previousName != card.fields[.name]?.first ? previousName : nil))
                }
            }
            return out.sorted { ($0.card.received, $0.card.id ?? 0) > ($1.card.received, $1.card.id ?? 0) }
        }
    }
}
