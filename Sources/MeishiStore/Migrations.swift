import Foundation
import GRDB
import MeishiCard
import MeishiText

/// Every migration of the store, in the order they run.
///
/// A migration is never edited or renamed once shipped: a change to the schema is a new
/// migration at the end. Each runs in its own transaction; `ContactStore.migrate` lets one
/// process at a time run them (see there).
extension ContactStore {
    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1-contacts") { db in
            try db.create(table: "contact") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("did", .text).notNull().unique()
                t.column("name", .text)
                t.column("org", .text)
                t.column("fields", .text).notNull()
                t.column("level", .text).notNull()
                t.column("trust", .text).notNull()
                t.column("source", .text).notNull()
                t.column("firstSeen", .integer).notNull()
                t.column("lastSeen", .integer).notNull()
                t.column("cardTimestamp", .integer).notNull()
                t.column("signPubKey", .blob)
                t.column("pubKey", .blob)
                t.column("payload", .blob)
                t.column("conflictsWith", .text)
            }
            try db.execute(sql: "CREATE INDEX contact_on_name ON contact(name COLLATE NOCASE, id)")
            try db.create(table: "contact_value") { t in
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("field", .text).notNull()
                t.column("value", .text).notNull()
                t.column("normalized", .text).notNull()
            }
            try db.create(index: "contact_value_on_contact", on: "contact_value", columns: ["contactId"])
            try db.create(index: "contact_value_on_normalized", on: "contact_value", columns: ["normalized"])
        }
        // The impersonation check compares names by their confusable skeletons (NameSkeleton),
        // not by `name COLLATE NOCASE`: filled here for the contacts stored before.
        m.registerMigration("v2-name-skeleton") { db in
            try db.alter(table: "contact") { t in
                t.add(column: "nameSkeleton", .text)
                t.add(column: "nameSkeletonAsTyped", .text)
            }
            let rows = try Row.fetchAll(db, sql: "SELECT id, name FROM contact WHERE name IS NOT NULL")
            let update = try db.makeStatement(sql: "UPDATE contact SET nameSkeleton = ?, nameSkeletonAsTyped = ? WHERE id = ?")
            for row in rows {
                let name: String = row["name"]
                try update.execute(arguments: [NameSkeleton.folded(name), NameSkeleton.asTyped(name), row["id"] as Int64])
            }
            try db.create(index: "contact_on_nameSkeleton", on: "contact", columns: ["nameSkeleton"])
            try db.create(index: "contact_on_nameSkeletonAsTyped", on: "contact", columns: ["nameSkeletonAsTyped"])
        }
        // Values an unsigned vCard added to a verified contact, and what a vCard held beyond the fields.
        m.registerMigration("v2-vcard-import") { db in
            try db.alter(table: "contact") { t in
                t.add(column: "unsignedFields", .text)
                t.add(column: "vcard", .text)
            }
        }
        // Common friends: the last comparison with each contact and the friends it found.
        m.registerMigration("v3-common-friends") { db in
            try db.create(table: "friend_comparison") { t in
                t.primaryKey("contactId", .integer).references("contact", onDelete: .cascade)
                t.column("mode", .text).notNull()
                t.column("at", .integer).notNull()
                t.column("peerSetSize", .integer).notNull()
            }
            try db.create(table: "common_friend") { t in
                t.column("contactId", .integer).notNull().references("friend_comparison", column: "contactId", onDelete: .cascade)
                t.column("friendId", .integer).notNull().references("contact", onDelete: .cascade)
                t.primaryKey(["contactId", "friendId"])
            }
            try db.create(index: "common_friend_on_friend", on: "common_friend", columns: ["friendId"])
        }
        // Sealed messages received.
        m.registerMigration("v3-messages") { db in
            try db.create(table: "message") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("senderDID", .text).notNull()
                t.column("received", .integer).notNull()
                t.column("expires", .integer).notNull()
                t.column("once", .boolean).notNull()
                t.column("shownAt", .integer)
                t.column("envelope", .blob).notNull()
            }
            // Ids (hashed) of every message received, kept until the message would have expired
            // even when it was deleted sooner: a replay or a retry is acknowledged, never stored twice.
            try db.create(table: "message_seen") { t in
                t.primaryKey("idHash", .blob)
                t.column("expires", .integer).notNull()
            }
        }
        // How many friends each comparison found, so a later listing can say how many were deleted since.
        m.registerMigration("v4-common-friends-found") { db in
            try db.alter(table: "friend_comparison") { t in t.add(column: "found", .integer) }
        }
        // The sender's key with each message.
        m.registerMigration("v4-message-sender-key") { db in
            try db.alter(table: "message") { t in t.add(column: "senderKey", .blob) }
        }
        // Every imported card merged into an existing contact, so `contacts split` can undo it.
        m.registerMigration("v5-import-merges") { db in
            try db.create(table: "import_merge") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("at", .integer).notNull()
                t.column("source", .text).notNull()
                t.column("key", .text).notNull()
                t.column("fields", .text).notNull()
                t.column("extras", .text)
                t.column("added", .text).notNull()
                t.column("extrasBefore", .text)
                t.column("cardTimestampBefore", .integer).notNull()
            }
            try db.create(index: "import_merge_on_contact", on: "import_merge", columns: ["contactId"])
        }
        // Every signed card a contact sent, and what earlier cards said that the current one does
        // not. The cards stored before are carried over: the contact's current card, with its
        // last-seen time as when it was received (the closest time the store knows).
        m.registerMigration("v5-card-history") { db in
            try db.create(table: "contact_card") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("payload", .blob).notNull()
                t.column("source", .text).notNull()
                t.column("trust", .text).notNull()
                t.column("received", .integer).notNull()
                t.column("cardTimestamp", .integer).notNull()
                t.column("level", .text).notNull()
                t.column("fields", .text).notNull()
            }
            try db.create(index: "contact_card_on_contact", on: "contact_card", columns: ["contactId", "cardTimestamp"])
            try db.alter(table: "contact") { t in t.add(column: "earlierFields", .text) }
            try db.execute(sql: """
                INSERT INTO contact_card (contactId, payload, source, trust, received, cardTimestamp, level, fields)
                SELECT id, payload, source, trust, lastSeen, cardTimestamp, level, fields FROM contact
                WHERE trust != 'unsigned' AND payload IS NOT NULL ORDER BY id
                """)
        }
        // Where and when each contact was met (`Meeting`). Each contact stored before gets one
        // meeting, its first-seen time, by the way its card came (an exchange's code or digits
        // were not recorded: `exchange`), without an event.
        m.registerMigration("v6-meetings") { db in
            try db.create(table: "meeting") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("at", .integer).notNull()
                t.column("how", .text).notNull()
                t.column("event", .text)
                t.column("gave", .text)
            }
            try db.create(index: "meeting_on_contact", on: "meeting", columns: ["contactId", "at"])
            try db.create(index: "meeting_on_event", on: "meeting", columns: ["event"])
            try db.execute(sql: """
                INSERT INTO meeting (contactId, at, how)
                SELECT id, firstSeen, CASE WHEN source = 'exchange' THEN 'exchange'
                                           WHEN source IN ('file', 'stdin') THEN 'file'
                                           WHEN source = 'vcard' THEN 'import'
                                           ELSE 'qr' END
                FROM contact ORDER BY id
                """)
        }
        // My own words about a contact, never shared: a note and tags (`PrivateNotes`). Apart
        // from the contact row, so a newer card, which rewrites that row, never touches them.
        m.registerMigration("v7-notes-and-tags") { db in
            try db.create(table: "contact_note") { t in
                t.primaryKey("contactId", .integer).references("contact", onDelete: .cascade)
                t.column("note", .text).notNull()
            }
            try db.create(table: "contact_tag") { t in
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("tag", .text).notNull().collate(.nocase)
                t.uniqueKey(["contactId", "tag"])
            }
            try db.create(index: "contact_tag_on_tag", on: "contact_tag", columns: ["tag"])
        }
        // Every card of mine `card push` delivered: to whom, when, at which level, signed when.
        m.registerMigration("v8-card-pushes") { db in
            try db.create(table: "card_push") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("at", .integer).notNull()
                t.column("level", .text).notNull()
                t.column("cardTimestamp", .integer).notNull()
            }
            try db.create(index: "card_push_on_contact", on: "card_push", columns: ["contactId", "at"])
        }
        // The vCard UID each unsigned contact is exported under and found again by on import:
        // the UID its exports carried so far for the contacts stored before. A merge keeps the
        // UID of the card it joined (for `split`) and is marked when undone, not deleted.
        m.registerMigration("v9-import-uid") { db in
            try db.alter(table: "contact") { t in t.add(column: "uid", .text) }
            let rows = try Row.fetchAll(db, sql: "SELECT id, did FROM contact WHERE trust = 'unsigned'")
            let update = try db.makeStatement(sql: "UPDATE contact SET uid = ? WHERE id = ?")
            for row in rows { try update.execute(arguments: [Contact.uuidURN(row["did"]), row["id"] as Int64]) }
            try db.create(index: "contact_on_uid", on: "contact", columns: ["uid"], unique: true)
            try db.alter(table: "import_merge") { t in
                t.add(column: "uid", .text)
                t.add(column: "undoneAt", .integer)
            }
            try db.create(index: "import_merge_on_key", on: "import_merge", columns: ["key"])
        }
        // Key rotations contacts made (`KeyRotations.swift`): every supersession statement applied
        // to a contact, kept as it arrived, so a card of an old DID is known as superseded and a
        // replayed statement as one.
        m.registerMigration("v10-key-rotations") { db in
            try db.create(table: "key_rotation") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("contactId", .integer).notNull().references("contact", onDelete: .cascade)
                t.column("oldDID", .text).notNull().unique()
                t.column("newDID", .text).notNull()
                t.column("time", .integer).notNull()
                t.column("received", .integer).notNull()
                t.column("statement", .blob).notNull()
            }
            try db.create(index: "key_rotation_on_contact", on: "key_rotation", columns: ["contactId", "time"])
        }
        // Codes of tables that ran here (`SpentCodes.swift`): a table's code serves one table.
        m.registerMigration("v11-spent-codes") { db in
            try db.create(table: "spent_code") { t in
                t.primaryKey("digest", .blob)
                t.column("at", .integer).notNull()
            }
        }
        return m
    }

    /// Runs the migrations not run yet, one process at a time.
    ///
    /// GRDB reads which migrations have run before it opens each migration's transaction, so two
    /// processes opening a new store together both ran `v1-contacts` and one failed with "table
    /// contact already exists". An exclusive `flock` on a lock file beside the store (SQLite's own
    /// locks are POSIX locks, which a process loses when it closes any descriptor of the
    /// database file, so the lock is not taken on the store itself) makes the others wait; each
    /// checks again once it holds the lock, and finds nothing left to do.
    func migrate() throws {
        let lockPath = path + "-migration.lock"
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.unavailable("migration lock: " + String(cString: strerror(errno))) }
        defer { close(fd) }  // closing the descriptor releases the lock
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw StoreError.unavailable("migration lock: " + String(cString: strerror(errno))) }
        }
        // Another process may have migrated while this one waited: its connection still holds
        // the schema it read before (no tables), and a PRAGMA such as GRDB's primary-key lookup
        // answers from it ("no such table: contact", "no such table: grdb_migrations"). Reading
        // the schema table checks SQLite's schema cookie and reloads it; GRDB's own cache is
        // cleared too. Done before the check under the lock, and again after migrating.
        try reloadSchema()
        if try !isCurrent() { try Self.migrator.migrate(pool) }
        try reloadSchema()
    }

    private func reloadSchema() throws {
        try pool.writeWithoutTransaction { db in
            _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master")
            db.clearSchemaCache()
        }
    }
}
