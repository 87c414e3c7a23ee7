import Foundation
import GRDB
import MeishiCard

/// One key rotation a contact made, applied here (migration `v10-key-rotations`): its
/// supersession statement as it arrived.
public struct KeyRotation: Equatable, Sendable {
    public let contactID: Int64
    public let oldDID: String
    public let newDID: String
    /// When the contact replaced its key (the statement's signed time) and when it came here.
    public let time: Int64
    public let received: Int64
    public let statement: [UInt8]

    init(row: Row) {
        contactID = row["contactId"]
        oldDID = row["oldDID"]
        newDID = row["newDID"]
        time = row["time"]
        received = row["received"]
        statement = [UInt8](row["statement"] as Data)
    }
}

/// Why a chain of supersession statements was not applied.
public enum RotationRefusal: Error, Equatable, Sendable {
    /// No contact holds a DID the statements replace (nor ever held one here).
    case neverHeld
    /// The contact holds the chain's last DID already: every statement was applied before.
    case alreadyApplied
    /// The DID was replaced before, by another statement (to `by`, at `at`): a second rotation of
    /// one key is refused, whoever made it first.
    case replacedAlready(by: String, at: Int64)
    /// The statement is not later than a rotation the contact already made.
    case notNewer
    /// The card that came with the statements is not of their last new DID.
    case cardOfAnotherDID
}

/// What applying a rotation did.
public struct RotationApplied: Equatable, Sendable {
    /// The contact, now under its new DID.
    public let contact: Contact
    /// The DID it held before.
    public let from: String
    /// The statements applied, oldest first.
    public let rotations: [KeyRotation]
    /// What storing the card that came with them did (`updated` when it is newer than the last).
    public let card: StoreOutcome
}

extension ContactStore {
    /// Applies a verified chain of statements (oldest first) and the card of its last new DID:
    /// the contact holding one of the chain's old DIDs (`held`, when the channel proved which) moves
    /// to the new DID with its history, meetings, notes, tags, pushes and trust; the statements
    /// are kept; the card is stored as a newer card of it. A contact already stored under the new
    /// DID (met again before the statement came) is folded into it. All of it, or nothing.
    public func applyRotation(_ chain: [RotationStatement], card: Contact, held: String?, now: Int64,
                              meeting: Meeting? = nil) throws(StoreError) -> Result<RotationApplied, RotationRefusal> {
        try write { db in
            guard let last = chain.last else { return .failure(.neverHeld) }
            guard card.did == last.newDID else { return .failure(.cardOfAnotherDID) }
            let olds = chain.map(\.oldDID)
            let holders = try Contact.filter(olds.contains(Column("did"))).fetchAll(db)
            guard var contact = holders.first(where: { held == nil || $0.did == held }) else {
                let current = try Contact.filter(Column("did") == last.newDID).fetchOne(db)
                if current != nil, held == nil || held == last.newDID { return .failure(.alreadyApplied) }
                for old in olds {
                    if let earlier = try Self.rotation(replacing: old, in: db) { return .failure(.replacedAlready(by: earlier.newDID, at: earlier.time)) }
                }
                return .failure(.neverHeld)
            }
            let from = contact.did
            let start = olds.firstIndex(of: from)!
            let previous = try Row.fetchOne(db, sql: "SELECT MAX(time) AS t FROM key_rotation WHERE contactId = ?", arguments: [contact.id!])?["t"] as Int64?
            for s in chain[start...] {
                if let earlier = try Self.rotation(replacing: s.oldDID, in: db) { return .failure(.replacedAlready(by: earlier.newDID, at: earlier.time)) }
                if let previous, s.time <= previous { return .failure(.notNewer) }
            }
            // Met again under the new DID before the statement came: that contact joins this one.
            if let other = try Contact.filter(Column("did") == last.newDID).fetchOne(db), other.id != contact.id {
                try Self.fold(other, into: &contact, in: db)
            }
            for s in chain[start...] {
                try db.execute(sql: """
                    INSERT INTO key_rotation (contactId, oldDID, newDID, time, received, statement) VALUES (?, ?, ?, ?, ?, ?)
                    """, arguments: [contact.id!, s.oldDID, s.newDID, s.time, now, Data(s.bytes)])
            }
            contact.did = last.newDID
            contact.signPubKey = card.signPubKey
            contact.pubKey = card.pubKey
            try contact.update(db)
            let outcome = try Self.store(card, in: db)
            if let meeting { try Self.record(meeting, on: contact.id!, in: db) }
            let applied = try Self.rotations(of: contact.id!, in: db).filter { r in chain[start...].contains { $0.oldDID == r.oldDID } }
            return .success(RotationApplied(contact: outcome.contact, from: from, rotations: applied, card: outcome))
        }
    }

    /// The rotation that replaced `did`, if a contact made one.
    public func rotation(replacing did: String) throws(StoreError) -> KeyRotation? {
        try read { db in try Self.rotation(replacing: did, in: db) }
    }

    static func rotation(replacing did: String, in db: Database) throws -> KeyRotation? {
        try Row.fetchOne(db, sql: "SELECT * FROM key_rotation WHERE oldDID = ?", arguments: [did]).map(KeyRotation.init(row:))
    }

    /// The key rotations of a contact, oldest first.
    public func rotations(of contactID: Int64) throws(StoreError) -> [KeyRotation] {
        try read { db in try Self.rotations(of: contactID, in: db) }
    }

    static func rotations(of contactID: Int64, in db: Database) throws -> [KeyRotation] {
        try Row.fetchAll(db, sql: "SELECT * FROM key_rotation WHERE contactId = ? ORDER BY time, id", arguments: [contactID]).map(KeyRotation.init(row:))
    }
}

extension ContactStore {
    /// Moves what the store keeps about `other` (its cards, meetings, pushes, and my note and
    /// tags where `contact` has none) to `contact`, which keeps the higher trust and the wider
    /// seen times, and deletes `other`. The caller updates `contact`.
    static func fold(_ other: Contact, into contact: inout Contact, in db: Database) throws {
        for table in ["contact_card", "meeting", "card_push"] {
            try db.execute(sql: "UPDATE \(table) SET contactId = ? WHERE contactId = ?", arguments: [contact.id!, other.id!])
        }
        // The later common-friends comparison of the two stays with `contact`, and `other` as
        // someone's common friend becomes `contact` (the cascade would drop both).
        let at = { (id: Int64) in try Int64.fetchOne(db, sql: "SELECT at FROM friend_comparison WHERE contactId = ?", arguments: [id]) }
        if let theirs = try at(other.id!), try at(contact.id!).map({ theirs > $0 }) ?? true {
            try db.execute(sql: "DELETE FROM friend_comparison WHERE contactId = ?", arguments: [contact.id!])
            try db.execute(sql: """
                INSERT INTO friend_comparison (contactId, mode, at, peerSetSize, found)
                SELECT ?, mode, at, peerSetSize, found FROM friend_comparison WHERE contactId = ?
                """, arguments: [contact.id!, other.id!])
            try db.execute(sql: "UPDATE common_friend SET contactId = ? WHERE contactId = ?", arguments: [contact.id!, other.id!])
        }
        try db.execute(sql: "UPDATE OR IGNORE common_friend SET friendId = ? WHERE friendId = ?", arguments: [contact.id!, other.id!])
        try db.execute(sql: "DELETE FROM common_friend WHERE contactId = ? AND friendId = ?", arguments: [contact.id!, contact.id!])
        try db.execute(sql: "UPDATE OR IGNORE contact_tag SET contactId = ? WHERE contactId = ?", arguments: [contact.id!, other.id!])
        try db.execute(sql: "UPDATE OR IGNORE contact_note SET contactId = ? WHERE contactId = ?", arguments: [contact.id!, other.id!])
        contact.trust = max(contact.trust, other.trust)
        contact.lastSeen = max(contact.lastSeen, other.lastSeen)
        contact.firstSeen = min(contact.firstSeen, other.firstSeen)
        contact.conflictsWith = contact.conflictIDs.filter { $0 != other.id }.map(String.init).joined(separator: ",")
        if contact.conflictsWith == "" { contact.conflictsWith = nil }
        _ = try Contact.deleteOne(db, key: other.id!)
    }
}
