import Foundation
import GRDB

/// A message as stored: the envelope exactly as received (sealed to the recipient's static key:
/// the database never holds its text), with what the inbox and the purge need in the clear.
public struct StoredMessage: Codable, Equatable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "message"

    public var id: Int64?
    public var senderDID: String
    /// When it arrived, and when it must be gone (Unix seconds).
    public var received: Int64
    public var expires: Int64
    /// Deleted once it has been shown.
    public var once: Bool
    /// When the inbox first showed it; nil while unread.
    public var shownAt: Int64?
    public var envelope: Data
    /// The sender's X25519 key when it arrived (it opened the box then): the note still opens
    /// after the contact is deleted or sends a new card (nil for messages stored before v4).
    public var senderKey: Data?

    public init(senderDID: String, received: Int64, expires: Int64, once: Bool, envelope: [UInt8], senderKey: [UInt8]? = nil) {
        self.senderDID = senderDID
        self.received = received
        self.expires = expires
        self.once = once
        self.envelope = Data(envelope)
        self.senderKey = senderKey.map { Data($0) }
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }
}

/// What storing a received message did.
public enum MessageStoreOutcome: Equatable, Sendable {
    case stored(Int64)
    /// Its id was seen before (a retry after a lost acknowledgement): nothing stored.
    case duplicate
}

extension ContactStore {
    /// Stores a received envelope unless a message with the same id hash was seen before.
    public func storeMessage(_ message: StoredMessage, idHash: [UInt8]) throws(StoreError) -> MessageStoreOutcome {
        try write { db in
            if try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM message_seen WHERE idHash = ?)", arguments: [Data(idHash)]) == true {
                return .duplicate
            }
            try db.execute(sql: "INSERT INTO message_seen (idHash, expires) VALUES (?, ?)", arguments: [Data(idHash), message.expires])
            var m = message
            try m.insert(db)
            return .stored(m.id!)
        }
    }

    /// Unexpired messages, oldest first; with `includeShown`, those already read too.
    public func messages(includeShown: Bool, now: Int64) throws(StoreError) -> [StoredMessage] {
        try read { db in
            var request = StoredMessage.filter(sql: "expires > ?", arguments: [now])
            if !includeShown { request = request.filter(sql: "shownAt IS NULL") }
            return try request.order(sql: "received, id").fetchAll(db)
        }
    }

    /// Records that `ids` were shown at `now`; those sent `--once` are deleted (and scrubbed).
    public func markShown(_ ids: [Int64], now: Int64) throws(StoreError) {
        guard !ids.isEmpty else { return }
        let deleted = try write { db in
            try db.execute(sql: "UPDATE message SET shownAt = ? WHERE shownAt IS NULL AND id IN (\(databaseQuestionMarks(count: ids.count)))",
                           arguments: StatementArguments([now] + ids))
            try db.execute(sql: "DELETE FROM message WHERE once AND id IN (\(databaseQuestionMarks(count: ids.count)))",
                           arguments: StatementArguments(ids))
            return db.changesCount
        }
        if deleted > 0 { try checkpointTruncating() }
    }

    /// Whether anything is due for the purge at `now`: a cheap read, so opening the store writes
    /// nothing when nothing has expired.
    public func hasExpiredMessages(now: Int64) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS(SELECT 1 FROM message WHERE expires <= ?) OR EXISTS(SELECT 1 FROM message_seen WHERE expires <= ?)
                """, arguments: [now, now]) ?? false
        }
    }

    /// Deletes expired messages and the ids remembered for them, with `secure_delete` on (freed
    /// pages are zeroed), then checkpoints the WAL into the database and truncates it, so their
    /// bytes are in no file of the home. Returns how many messages were deleted.
    @discardableResult
    public func purgeExpiredMessages(now: Int64) throws(StoreError) -> Int {
        let deleted = try write { db in
            try db.execute(sql: "DELETE FROM message WHERE expires <= ?", arguments: [now])
            let messages = db.changesCount
            try db.execute(sql: "DELETE FROM message_seen WHERE expires <= ?", arguments: [now])
            return messages
        }
        try checkpointTruncating()
        return deleted
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`, retried for up to 2 s while another process (a reader
    /// in another meishi) keeps it from completing.
    public func checkpointTruncating(attempts: Int = 100) throws(StoreError) {
        for attempt in 0..<attempts {
            let busy = try walCheckpointIsBusy()
            if !busy { return }
            if attempt + 1 < attempts { usleep(20_000) }
        }
        throw .unavailable("the write-ahead log could not be checkpointed: another process keeps it open")
    }
}

extension ContactStore {
    /// The contact of exactly this DID, or nil.
    public func contact(did: String) throws(StoreError) -> Contact? {
        try read { db in try Contact.filter(Column("did") == did).fetchOne(db) }
    }

    /// Every contact whose card carries an X25519 key: who may send us messages (a listener's tag table).
    public func contactsWithMessageKeys(after id: Int64 = 0) throws(StoreError) -> [Contact] {
        try read { db in try Contact.filter(sql: "pubKey IS NOT NULL AND id > ?", arguments: [id]).order(sql: "id").fetchAll(db) }
    }
}
