import Foundation
import GRDB
import MeishiCard

/// A contact as an element of a common-friends comparison: its DID, and the emails and phones
/// its signed card holds, normalised (never the unsigned values merged into it).
public struct FriendCandidate: Equatable, Sendable {
    public let contactID: Int64
    public let did: String
    /// Trimmed and lowercased.
    public let emails: [String]
    /// E.164 only: a national number cannot be compared across countries.
    public let phones: [String]
}

/// A common-friends comparison that ran, to record on the contact it ran with: my contacts it
/// found (their ids), the mode, when, and how many elements the peer compared.
public struct FriendComparison: Sendable {
    public let friendIDs: [Int64]
    public let mode: String
    public let at: Int64
    public let peerSetSize: Int
    public init(friendIDs: [Int64], mode: String, at: Int64, peerSetSize: Int) {
        self.friendIDs = friendIDs
        self.mode = mode
        self.at = at
        self.peerSetSize = peerSetSize
    }
}

/// The last comparison with one contact: when, how, and which of my contacts it shares.
public struct CommonFriends: Equatable, Sendable {
    /// The mode that ran (`hash`, `ecdh`, `verified`).
    public let mode: String
    /// Unix seconds.
    public let at: Int64
    /// How many elements the peer compared.
    public let peerSetSize: Int
    /// My contacts it shares, still stored (a contact deleted later drops out), by name.
    public let friends: [Contact]
    /// How many the comparison found (nil for one recorded before this was kept): more than
    /// `friends.count` when some were deleted since.
    public let found: Int?

    /// Found by the comparison but deleted from my contacts since (re-adding one does not bring
    /// it back: it was matched as the contact it was then).
    public var deletedSince: Int { max(0, (found ?? friends.count) - friends.count) }
}

extension ContactStore {
    /// The contacts a comparison may use: signed or met (never unsigned), without `excludingDID`
    /// (the peer), ordered by id; their emails and phones only when `values` (`--match`), since
    /// reading the DIDs alone skips decoding every card.
    public func friendCandidates(excludingDID: String, values: Bool = true) throws(StoreError) -> [FriendCandidate] {
        try read { db in
            guard values else {
                return try Row.fetchAll(db, sql: "SELECT id, did FROM contact WHERE trust != ? AND did != ? ORDER BY id",
                                        arguments: [Trust.unsigned.rawValue, excludingDID])
                    .map { FriendCandidate(contactID: $0["id"], did: $0["did"], emails: [], phones: []) }
            }
            return try Contact.filter(Column("trust") != Trust.unsigned.rawValue && Column("did") != excludingDID).order(Column("id"))
                .fetchAll(db).map { c in
                    FriendCandidate(
                        contactID: c.id!, did: c.did,
                        emails: Array(Set((c.fields[.email] ?? []).map { CardText.normalizedEmail($0.trimmingCharacters(in: .whitespaces)) }
                            .filter { !$0.isEmpty })).sorted(),
                        phones: Array(Set((c.fields[.phone] ?? []).compactMap(CardText.e164))).sorted())
                }
        }
    }

    /// Records a comparison with `contactID`, replacing the one before. Friends deleted meanwhile
    /// are left out. (`store(_:meeting:comparison:)` records it with the card, in one commit.)
    public func record(_ comparison: FriendComparison, of contactID: Int64) throws(StoreError) {
        try write { db in try Self.record(comparison, of: contactID, in: db) }
    }

    static func record(_ comparison: FriendComparison, of contactID: Int64, in db: Database) throws {
        try db.execute(sql: "DELETE FROM friend_comparison WHERE contactId = ?", arguments: [contactID])
        try db.execute(sql: "INSERT INTO friend_comparison (contactId, mode, at, peerSetSize) VALUES (?, ?, ?, ?)",
                       arguments: [contactID, comparison.mode, comparison.at, comparison.peerSetSize])
        let insert = try db.makeStatement(sql: """
            INSERT OR IGNORE INTO common_friend (contactId, friendId) SELECT ?, id FROM contact WHERE id = ? AND id != ?
            """)
        for f in comparison.friendIDs { try insert.execute(arguments: [contactID, f, contactID]) }
        try db.execute(sql: "UPDATE friend_comparison SET found = (SELECT COUNT(*) FROM common_friend WHERE contactId = ?) WHERE contactId = ?",
                       arguments: [contactID, contactID])
    }

    /// The last comparison with `contactID`; nil when there was none (added by QR or import).
    public func commonFriends(of contactID: Int64) throws(StoreError) -> CommonFriends? {
        try read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT mode, at, peerSetSize, found FROM friend_comparison WHERE contactId = ?",
                                             arguments: [contactID]) else { return nil }
            let friends = try Contact.filter(sql: "id IN (SELECT friendId FROM common_friend WHERE contactId = ?)", arguments: [contactID])
                .order(sql: "name COLLATE NOCASE, id").fetchAll(db)
            return CommonFriends(mode: row["mode"], at: row["at"], peerSetSize: row["peerSetSize"], friends: friends, found: row["found"])
        }
    }

    /// One contact's line in `meishi friends`.
    public struct FriendCount: Sendable {
        public let contact: Contact
        /// How many of my contacts it shares; nil when never compared.
        public let shared: Int?
        public let mode: String?
        /// Matched then, deleted from my contacts since.
        public let deletedSince: Int
        /// Seen again (a later exchange or scan) after the comparison: the count may be out of date.
        public let seenSince: Bool
    }

    /// Every contact with the number of friends it shares with me; nil for a contact never compared.
    public func commonFriendCounts() throws(StoreError) -> [FriendCount] {
        try read { db in
            let counts = try Row.fetchAll(db, sql: """
                SELECT f.contactId, f.mode, f.at, f.found, (SELECT COUNT(*) FROM common_friend c WHERE c.contactId = f.contactId) AS n
                FROM friend_comparison f
                """)
            var byID: [Int64: Row] = [:]
            for r in counts { byID[r["contactId"]] = r }
            return try Contact.all().order(sql: "name COLLATE NOCASE, id").fetchAll(db).map { c in
                guard let r = byID[c.id!] else { return FriendCount(contact: c, shared: nil, mode: nil, deletedSince: 0, seenSince: false) }
                let n: Int = r["n"], found: Int? = r["found"], at: Int64 = r["at"]
                return FriendCount(contact: c, shared: n, mode: r["mode"], deletedSince: max(0, (found ?? n) - n), seenSince: c.lastSeen > at)
            }
        }
    }
}
