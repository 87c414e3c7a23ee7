import CSQLiteShim
import Foundation
import GRDB
internal import GRDBSQLite
import Logging
import MeishiCard
import MeishiCrypto
import MeishiText

/// Failures of the contact store.
public enum StoreError: Error, Equatable, Sendable {
    /// No contact matches the reference.
    case notFound(String)
    /// A reference that is an id (all digits, or `#` and digits) names no contact.
    case noSuchID(Int64)
    /// The reference is empty (or only spaces): it names nothing.
    case emptyReference
    /// Several contacts match; the candidates are listed as "id name did".
    case ambiguous(String, candidates: [String])
    /// The database could not be opened or used; the text is SQLite's.
    case unavailable(String)
    /// A stored row cannot be read back (edited by hand, or a bug): which one and why.
    case damaged(String)
    /// A value of the named field (or `did`) holds a NUL character; nothing was stored.
    case nulCharacter(field: String)
    /// `split` found no merge into the contact left to undo, and why.
    case nothingToSplit(id: Int64, name: String?, NothingToSplit)
    /// A card of a DID its holder replaced (`KeyRotation`): contact `contactID` moved from it to
    /// `newDID` at `at`; nothing was stored.
    case superseded(did: String, newDID: String, at: Int64, contactID: Int64)
}

/// What storing a card did.
public enum StoreOutcome: Equatable, Sendable {
    /// A new DID; `conflicts` are other contacts using the same name or email.
    case added(Contact, conflicts: [Contact])
    /// A newer card replaced the stored one.
    case updated(Contact, conflicts: [Contact])
    /// The stored card is as new or newer; only trust and last-seen may have changed.
    case unchanged(Contact)

    public var contact: Contact {
        switch self {
        case .added(let c, _), .updated(let c, _), .unchanged(let c): c
        }
    }

    /// Other contacts using the same name or email under a different key.
    public var conflicts: [Contact] {
        switch self {
        case .added(_, let c), .updated(_, let c): c
        case .unchanged: []
        }
    }

    /// `added`, `updated` or `unchanged`, as `--json` output names it.
    public var name: String {
        switch self {
        case .added: "added"
        case .updated: "updated"
        case .unchanged: "unchanged"
        }
    }
}

/// Filters for listing contacts.
public struct ContactQuery: Sendable {
    public var trust: Trust?
    public var search: String?
    /// Only contacts met at an event whose name contains this text (ignoring ASCII case).
    public var event: String?
    /// Only contacts with this tag (ignoring ASCII case).
    public var tag: String?
    public var limit: Int?
    public init(trust: Trust? = nil, search: String? = nil, event: String? = nil, tag: String? = nil, limit: Int? = nil) {
        self.trust = trust
        self.search = search
        self.event = event
        self.tag = tag
        self.limit = limit
    }
}

/// The SQLite store of contacts, in WAL mode through a GRDB `DatabasePool`.
public final class ContactStore: Sendable {
    public static let fileName = "meishi.sqlite"
    let pool: DatabasePool
    public let path: String
    let logger: Logger

    /// Opens (creating with mode 0600 when missing) and migrates the store at `path`.
    public convenience init(path: String, logger: Logger = Logger(label: "meishi.store")) throws(StoreError) {
        try self.init(path: path, logger: logger, readOnly: false)
        do {
            // Checking first keeps an up-to-date store free of write transactions (and fsyncs).
            // A check that fails while another process is migrating (its schema half made)
            // is asked again under the migration lock.
            if (try? isCurrent()) != true { try migrate() }
        } catch let e as StoreError {
            throw e
        } catch {
            throw .unavailable(Self.describe(error))
        }
    }

    /// Opens the store at `path` for a command that only reads: a read-only connection, so no
    /// write-ahead log set-up, no write transaction and no fsync, which an up-to-date store
    /// does not need. Nil when there is no store yet or it needs migrating: `init(path:)` then.
    public static func readOnly(path: String, logger: Logger = Logger(label: "meishi.store")) throws(StoreError) -> ContactStore? {
        guard access(path, F_OK) == 0 else { return nil }
        let store = try ContactStore(path: path, logger: logger, readOnly: true)
        do { return try store.isCurrent() ? store : nil } catch { throw .unavailable(Self.describe(error)) }
    }

    private init(path: String, logger: Logger, readOnly: Bool) throws(StoreError) {
        self.path = path
        self.logger = logger
        if !readOnly {
            // SQLite gives the -wal and -shm files the main file's mode, so creating it 0600
            // first keeps all three private.
            let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .unavailable(String(cString: strerror(errno))) }
            close(fd)
        }
        var config = Configuration()
        config.readonly = readOnly
        config.busyMode = .timeout(Self.busyTimeout)
        config.label = "meishi"
        let trace = logger.logLevel <= .trace
        config.prepareDatabase { db in
            // Keep the -wal file when the last connection closes. Otherwise every command would
            // find it gone, and GRDB recreates it with a write transaction and four fsyncs.
            var persist: Int32 = 1
            _ = sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_PERSIST_WAL, &persist)
            // Nor is the log copied into the database file then (see `boundLog`).
            if let connection = db.sqliteConnection { _ = meishi_sqlite_no_checkpoint_on_close(UnsafeMutableRawPointer(connection)) }
            // Deleted rows (expired messages) are overwritten with zeros, not left in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
            if trace { db.trace { logger.trace("sql: \($0)") } }
            db.add(function: ContactStore.foldFunction)
            db.add(function: ContactStore.digitsFunction)
        }
        do {
            pool = try DatabasePool(path: path, configuration: config)
            // Each commit reaches the disk before it returns (GRDB sets NORMAL, under which only
            // checkpoints do): see `boundLog`.
            if !readOnly { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") } }
        } catch {
            throw .unavailable(Self.describe(error))
        }
        logger.debug("opened store", metadata: ["path": "\(path)", "readOnly": "\(readOnly)"])
    }

    /// Whether every migration has run.
    func isCurrent() throws -> Bool {
        let migrator = Self.migrator
        return try pool.writeWithoutTransaction { db in try migrator.hasCompletedMigrations(db) }
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? DatabaseError { return e.message ?? "\(e.resultCode)" }
        return "\(error)"
    }

    /// Runs `body` in a read-only transaction.
    ///
    /// It runs on the writer connection, which opening the store has already set up: a one-shot
    /// command then pays for one SQLite connection, not two (about 2.5 ms on a large store). WAL
    /// still lets other processes read and write meanwhile.
    public func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try pool.writeWithoutTransaction { db in
                try db.readOnly {
                    var result: T?
                    try db.inTransaction(.deferred) {
                        result = try body(db)
                        return .commit
                    }
                    return result!
                }
            }
        } catch let e as StoreError { throw e } catch { throw .unavailable(Self.describe(error)) }
    }

    /// Runs `body` in a write transaction: all of it is stored, or none. Its commit is on the disk
    /// when it returns.
    public func write<T: Sendable>(_ body: @Sendable (Database) throws -> T) throws(StoreError) -> T {
        let value: T
        do { value = try pool.write(body) } catch let e as StoreError { throw e } catch { throw .unavailable(Self.describe(error)) }
        boundLog()
        return value
    }

    /// How long a statement waits for another process's lock before it fails.
    static let busyTimeout: TimeInterval = 10

    /// The write-ahead log's size past which a write empties it into the database file.
    static let logLimit = 1 << 20

    /// Keeps the write-ahead log short. Every process that opens the store first reads the whole
    /// log (SQLite rebuilds its index from it), and SQLite starts the log anew only when a write
    /// follows a complete checkpoint in the same process: the checkpoint SQLite made when a
    /// command closed its store copied the log into the database file, with three fsyncs, and
    /// still left every frame for the next process to read (up to 4 MB, its automatic
    /// checkpoint's 1,000 pages). So no checkpoint is made at close (`CSQLiteShim`), a commit is
    /// made durable by itself (`PRAGMA synchronous = FULL`: one fsync of the log), and a write
    /// that leaves the log past `logLimit` empties it, if no other process is reading it (one
    /// try, no waiting: the next write tries again). The checkpoint at close took 1.5-2 ms of every
    /// exchange (issue 23); the commit's own fsync takes about 0.3 ms.
    func boundLog() {
        var st = stat()
        guard stat(path + "-wal", &st) == 0, Int(st.st_size) > Self.logLimit else { return }
        do {
            if try walCheckpointIsBusy() { logger.debug("write-ahead log not emptied: another process is reading it") }
        } catch {
            logger.warning("write-ahead log not emptied yet: \(error)")
        }
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)` once, waiting for no lock (the busy timeout is 0
    /// meanwhile); true when another process kept it from completing. Its callers retry, or
    /// leave it to a later write: a try that sat in the busy timeout held this process's writer
    /// for up to 10 s, and other processes' writes could then pass their own timeout (the likely
    /// cause of "database is locked" in `twentyCommandsOnAFreshStoreAtOnce` on a starved machine).
    func walCheckpointIsBusy() throws(StoreError) -> Bool {
        do {
            return try pool.writeWithoutTransaction { db in
                let connection = db.sqliteConnection
                sqlite3_busy_timeout(connection, 0)
                defer { sqlite3_busy_timeout(connection, Int32(Self.busyTimeout * 1000)) }
                return (try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")?[0] as Int?) != 0
            }
        } catch { throw .unavailable(Self.describe(error)) }
    }

    // MARK: Storing

    /// Stores `incoming`: a new DID is added; a known DID gets the fields of the newer card
    /// (never older over newer) and keeps the higher trust. Every signed card is also kept in
    /// the contact's history (`ReceivedCard`), an older one too, and what earlier cards said that
    /// the current one does not stays in `earlierFields`; an `updated` contact carries the card
    /// it replaced in `replaced`. A `meeting`, and the common-friends `comparison` that ran with
    /// it, are recorded on the contact in the same transaction (one commit, one fsync).
    public func store(_ incoming: Contact, meeting: Meeting? = nil, comparison: FriendComparison? = nil) throws(StoreError) -> StoreOutcome {
        try write { db in
            let outcome = try Self.store(incoming, in: db)
            if let meeting { try Self.record(meeting, on: outcome.contact.id!, in: db) }
            if let comparison { try Self.record(comparison, of: outcome.contact.id!, in: db) }
            return outcome
        }
    }

    static func store(_ incoming: Contact, in db: Database) throws -> StoreOutcome {
        try refuseNUL(incoming)
        guard let partner = try provenPartner(of: incoming, in: db) else { return try storePlain(incoming, in: db) }
        // One person with two signed identities, each card naming the other (`sameAs`): one
        // contact, the meishi (Ed25519) one, which keeps the other's cards in its history.
        if DIDKey.ed25519PublicKey(from: incoming.did) != nil {
            let outcome = try storePlain(incoming, in: db)
            var primary = outcome.contact
            try fold(partner, into: &primary, in: db)
            try primary.update(db)
            let others = outcome.conflicts.filter { $0.id != partner.id }
            switch outcome {
            case .added: return .added(primary, conflicts: others)
            case .updated: return .updated(primary, conflicts: others)
            case .unchanged: return .unchanged(primary)
            }
        }
        var primary = partner
        if let separate = try Contact.filter(Column("did") == incoming.did).fetchOne(db) { try fold(separate, into: &primary, in: db) }
        primary.lastSeen = max(primary.lastSeen, incoming.lastSeen)
        try keepCards([incoming], of: &primary, in: db)
        try primary.update(db)
        return .unchanged(primary)
    }

    /// The contact `incoming` is one person with: a signed contact whose DID `incoming` names in
    /// `x-same-as` and whose own card names `incoming`'s DID there too. A claim one way only
    /// links nothing.
    static func provenPartner(of incoming: Contact, in db: Database) throws -> Contact? {
        guard incoming.trust > .unsigned, let claimed = incoming.fields[.sameAs], !claimed.isEmpty else { return nil }
        return try Contact.filter(claimed.contains(Column("did"))).fetchAll(db).first { other in
            other.trust > .unsigned && other.did != incoming.did && (other.fields[.sameAs] ?? []).contains(incoming.did)
        }
    }

    /// Stores `incoming` by its DID alone (see `store`).
    static func storePlain(_ incoming: Contact, in db: Database) throws -> StoreOutcome {
        if var existing = try Contact.filter(Column("did") == incoming.did).fetchOne(db) {
            let stored = existing  // as it arrived, for the history
            existing.lastSeen = max(existing.lastSeen, incoming.lastSeen)
            // Unsigned data never replaces what a signature vouched for.
            let downgrade = incoming.trust == .unsigned && existing.trust > .unsigned
            guard incoming.cardTimestamp > existing.cardTimestamp, !downgrade else {
                existing.trust = max(existing.trust, incoming.trust)
                if !downgrade { try keepCards([stored, incoming], of: &existing, in: db) }
                try existing.update(db)
                return .unchanged(existing)
            }
            var updated = incoming
            updated.id = existing.id
            updated.firstSeen = existing.firstSeen
            updated.trust = max(existing.trust, incoming.trust)
            updated.unsignedFields = existing.unsignedFields
            updated.vcard = existing.vcard
            // The card it replaces first, should it not be kept yet (stored by `insertAll`).
            try keepCards([stored, incoming], of: &updated, in: db)
            let conflicts = try conflicts(for: updated, in: db)
            updated.conflictsWith = conflicts.isEmpty ? nil : conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
            try updated.update(db)
            try replaceValues(of: updated, in: db)
            try noteLookAlike(updated.id!, on: conflicts, in: db)
            updated.replaced = ReplacedCard(fields: existing.fields, level: existing.level)
            return .updated(updated, conflicts: conflicts)
        }
        // An old QR code or file of someone who has since replaced the key: never a new contact.
        if incoming.trust != .unsigned, let r = try rotation(replacing: incoming.did, in: db) {
            throw StoreError.superseded(did: incoming.did, newDID: r.newDID, at: r.time, contactID: r.contactID)
        }
        var (added, conflicts) = try insertNew(incoming, in: db)
        try keepCards([incoming], of: &added, in: db)
        return .added(added, conflicts: conflicts)
    }

    /// Inserts a contact whose DID is not stored yet, flagged with the contacts it may impersonate.
    static func insertNew(_ incoming: Contact, in db: Database) throws -> (Contact, conflicts: [Contact]) {
        var added = incoming
        let conflicts = try conflicts(for: added, in: db)
        added.conflictsWith = conflicts.isEmpty ? nil : conflicts.compactMap(\.id).map(String.init).joined(separator: ",")
        try added.insert(db)
        try replaceValues(of: added, in: db)
        try noteLookAlike(added.id!, on: conflicts, in: db)
        return (added, conflicts)
    }

    /// Most look-alikes a contact records, stored before it and after it (each list). A name that
    /// thousands of contacts share (a company directory of Alices, or a crafted file) once made
    /// every newcomer rewrite the list of every earlier one: importing 2,000 took minutes and
    /// gigabytes. The first ones are the ones worth naming: the earliest is the one copied.
    public static let maximumLookAlikes = 16

    /// Records `id` on each of `others` too, so a contact shows the look-alikes stored after it
    /// (the one stored later is the one marked `!`), up to `maximumLookAlikes` of them.
    static func noteLookAlike(_ id: Int64, on others: [Contact], in db: Database) throws {
        for var other in others where other.id != nil && !other.conflictIDs.contains(id)
            && other.laterLookAlikes.count < maximumLookAlikes {
            other.conflictsWith = (other.conflictIDs + [id]).map(String.init).joined(separator: ",")
            try db.execute(sql: "UPDATE contact SET conflictsWith = ? WHERE id = ?", arguments: [other.conflictsWith, other.id])
        }
    }

    /// Inserts many new contacts in one transaction (imports and benchmarks), with prepared
    /// statements rather than one record encoding per row.
    public func insertAll(_ contacts: [Contact]) throws(StoreError) {
        try write { db in
            let contact = try db.makeStatement(sql: """
                INSERT INTO contact (did, name, org, fields, level, trust, source, firstSeen, lastSeen, cardTimestamp,
                                     signPubKey, pubKey, payload, conflictsWith, nameSkeleton, nameSkeletonAsTyped)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let value = try db.makeStatement(sql: "INSERT INTO contact_value (contactId, field, value, normalized) VALUES (?, ?, ?, ?)")
            for c in contacts {
                try Self.refuseNUL(c)
                try contact.execute(arguments: [
                    c.did, c.name, c.org, FieldsColumn.encode(c.fields), c.level.rawValue, c.trust.rawValue, c.source,
                    c.firstSeen, c.lastSeen, c.cardTimestamp, c.signPubKey.map { Data($0.rawRepresentation) },
                    c.pubKey.map { Data($0.rawRepresentation) }, c.payload, c.conflictsWith, c.nameSkeleton,
                    c.nameSkeletonAsTyped,
                ])
                let id = db.lastInsertedRowID
                for v in c.matchValues { try value.execute(arguments: [id, v.field.rawValue, v.value, v.normalized]) }
            }
        }
        emptyLog()
    }

    /// Copies the write-ahead log into the database file and truncates it; run after a bulk write.
    ///
    /// The log keeps every page the write changed (70 MB after 100,000 contacts; the store keeps
    /// its log file, see SQLITE_FCNTL_PERSIST_WAL), and the first connection of every later
    /// process read all of it again to rebuild the log's index: `contacts list` took 130 ms
    /// instead of under 10. The rows are committed already, so a checkpoint that cannot finish
    /// (another process keeps reading) is only logged; SQLite's automatic checkpoints follow.
    func emptyLog() {
        do { try checkpointTruncating() } catch { logger.warning("write-ahead log not emptied yet: \(error)") }
    }

    static func replaceValues(of contact: Contact, in db: Database) throws {
        try ContactValue.filter(Column("contactId") == contact.id!).deleteAll(db)
        for v in contact.matchValues {
            try ContactValue(contactId: contact.id!, field: v.field, value: v.value, normalized: v.normalized).insert(db)
        }
    }

    /// NUL cuts text short in C APIs and SQLite functions: a contact holding one is refused.
    static func refuseNUL(_ c: Contact) throws {
        if TerminalText.containsNUL(c.did) { throw StoreError.nulCharacter(field: "did") }
        if let f = c.fieldWithNUL { throw StoreError.nulCharacter(field: f.rawValue) }
    }

    /// Other DIDs whose name has one of the same confusable skeletons (`NameSkeleton`: it looks
    /// the same on a screen), or that use one of the same emails: the `maximumLookAlikes` stored
    /// first, each query reading no more rows than that.
    static func conflicts(for contact: Contact, in db: Database) throws -> [Contact] {
        var ids = Set<Int64>()
        for (column, key) in [("nameSkeleton", contact.nameSkeleton), ("nameSkeletonAsTyped", contact.nameSkeletonAsTyped)] {
            guard let key, !key.isEmpty else { continue }
            let rows = try Int64.fetchAll(db.cachedStatement(sql: "SELECT id FROM contact WHERE \(column) = ? AND did != ? ORDER BY id LIMIT ?"),
                                          arguments: [key, contact.did, maximumLookAlikes])
            ids.formUnion(rows)
        }
        ids.formUnion(try Self.ids(sharing: .email, with: contact, verifiedOnly: false, limit: maximumLookAlikes, in: db))
        guard !ids.isEmpty else { return [] }
        let first = ids.sorted().prefix(maximumLookAlikes)
        return try Contact.filter(keys: Array(first)).order(Column("id")).fetchAll(db)
    }

    /// Ids of the other DIDs holding one of `contact`'s values of `field` (email or phone,
    /// compared normalised), only verified ones when `verifiedOnly`.
    static func ids(sharing field: FieldName, with contact: Contact, verifiedOnly: Bool, limit: Int = maximumLookAlikes,
                    in db: Database) throws -> [Int64] {
        let values = (contact.fields[field] ?? []).map { Contact.normalized(field, $0) }
        guard !values.isEmpty else { return [] }
        return try Int64.fetchAll(db.cachedStatement(sql: """
            SELECT DISTINCT c.id FROM contact_value v JOIN contact c ON c.id = v.contactId
            WHERE v.field = ? AND v.normalized IN (\(databaseQuestionMarks(count: values.count))) AND c.did != ?
            \(verifiedOnly ? "AND c.trust != 'unsigned'" : "") ORDER BY c.id LIMIT ?
            """), arguments: StatementArguments([field.rawValue] + values + [contact.did, limit]))
    }

    // MARK: Reading

    public func count() throws(StoreError) -> Int {
        try read { db in try Contact.fetchCount(db) }
    }

    public func list(_ query: ContactQuery) throws(StoreError) -> [Contact] {
        let (sql, arguments) = Self.listSQL(query)
        return try read { db in try Contact.fetchAll(db, sql: sql, arguments: arguments) }
    }

    /// `meishi_fold(text)`: the text lowercased for every letter (SQLite's LIKE and NOCASE fold ASCII only).
    static let foldFunction = DatabaseFunction("meishi_fold", argumentCount: 1, pure: true) { values in
        String.fromDatabaseValue(values[0])?.lowercased()
    }

    /// `meishi_digits(text)`: the ASCII digits of the text.
    static let digitsFunction = DatabaseFunction("meishi_digits", argumentCount: 1, pure: true) { values in
        String.fromDatabaseValue(values[0]).map { String($0.unicodeScalars.filter { ("0"..."9").contains($0) }) }
    }

    /// The digits a search query compares phones by, when it looks like a phone number (digits,
    /// at least 6, with `+`, spaces, `-`, `.`, `/` and parentheses only): a national number's
    /// leading zeros (trunk prefix) dropped, so that `090-1234-5678` is found in `+81 90 1234 5678`.
    static func phoneDigits(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || " +-./()".unicodeScalars.contains($0) }) else { return nil }
        var digits = String(trimmed.unicodeScalars.filter { ("0"..."9").contains($0) })
        guard digits.count >= 6 else { return nil }
        if !trimmed.hasPrefix("+") { digits = String(digits.drop { $0 == "0" }) }
        return digits
    }

    /// The listing as one SQL statement. Sorted by `contact_on_name`, so with a limit SQLite reads
    /// only the rows it returns (no sort of the whole table), which the tests check with EXPLAIN
    /// QUERY PLAN. Written out rather than built with the query interface, whose generation cost
    /// a `contacts list` 2.4 million instructions (7 %).
    static func listSQL(_ query: ContactQuery) -> (String, StatementArguments) {
        var conditions: [String] = []
        var arguments = StatementArguments()
        if let trust = query.trust {
            conditions.append("trust = ?")
            arguments += [trust.rawValue]
        }
        if let text = query.search, !text.isEmpty {
            let pattern = "%" + likeEscaped(text) + "%"
            // A query that looks like a phone number is compared by its digits too, with the
            // stored E.164 form (trial 7, F23): "+819012345678" and "090-1234-5678" find
            // "+81 90 1234 5678" as the import's merge rules compare them.
            let phone = phoneDigits(text).map { _ in
                " OR id IN (SELECT contactId FROM contact_value WHERE field = 'phone'"
                    + " AND (instr(meishi_digits(normalized), ?) > 0 OR instr(meishi_digits(value), ?) > 0))"
            } ?? ""
            conditions.append("""
                (name LIKE ? ESCAPE '\\' OR org LIKE ? ESCAPE '\\' OR did LIKE ? ESCAPE '\\'
                 OR id IN (SELECT contactId FROM contact_value WHERE value LIKE ? ESCAPE '\\')\(phone))
                """)
            arguments += [pattern, pattern, pattern, pattern]
            if let digits = phoneDigits(text) { arguments += [digits, digits] }
        }
        // Events and tags ignore case for every letter, as tags' de-duplication and --untag do
        // (SQLite's LIKE and NOCASE fold ASCII only: trial 7, F19).
        if let text = query.event, !text.isEmpty {
            conditions.append("id IN (SELECT contactId FROM meeting WHERE instr(meishi_fold(event), ?) > 0)")
            arguments += [text.lowercased()]
        }
        if let tag = query.tag {
            conditions.append("id IN (SELECT contactId FROM contact_tag WHERE meishi_fold(tag) = ?)")
            arguments += [tag.lowercased()]
        }
        var sql = "SELECT * FROM contact"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY name COLLATE NOCASE, id"
        if let limit = query.limit {
            sql += " LIMIT ?"
            arguments += [limit]
        }
        return (sql, arguments)
    }

    /// The one contact `ref` names: an id (all digits, or `#` and digits: an id and nothing else,
    /// so a stale id never falls through to a name holding those digits), a DID or unique DID
    /// prefix, or a unique name match (exact, ignoring case, else a unique substring).
    public func resolve(_ ref: String) throws(StoreError) -> Contact {
        try read { db in try Self.resolve(ref, in: db) }
    }

    static func resolve(_ ref: String, in db: Database) throws -> Contact {
        let trimmed = ref.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw StoreError.emptyReference }
        if Self.isID(trimmed) {
            guard let id = Int64(trimmed.trimmingPrefix("#")) else { throw StoreError.notFound(ref) }
            guard let c = try Contact.fetchOne(db, key: id) else { throw StoreError.noSuchID(id) }
            return c
        }
        if let didPrefix = didPrefix(trimmed) {
            if let c = try Contact.filter(Column("did") == didPrefix).fetchOne(db) { return c }
            let found = try Contact.filter(sql: "did LIKE ? ESCAPE '\\'", arguments: [likeEscaped(didPrefix) + "%"]).limit(10).fetchAll(db)
            return try unique(found, ref)
        }
        let exact = try Contact.filter(sql: "name = ? COLLATE NOCASE", arguments: [trimmed]).limit(10).fetchAll(db)
        if !exact.isEmpty { return try unique(exact, ref) }
        let pattern = "%" + likeEscaped(trimmed) + "%"
        let partial = try Contact.filter(sql: "name LIKE ? ESCAPE '\\'", arguments: [pattern]).limit(10).fetchAll(db)
        return try unique(partial, ref)
    }

    /// Whether a ref is an id and nothing else: all ASCII digits, or `#` and digits.
    public static func isID(_ ref: String) -> Bool {
        let digits = ref.hasPrefix("#") ? ref.dropFirst() : Substring(ref)
        return !digits.isEmpty && digits.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// The DID (prefix) a ref names: `did:…` as typed, a bare `z6Mk…` with `did:key:` before it;
    /// nil for a ref that is not one (an id or a name).
    public static func didPrefix(_ ref: String) -> String? {
        ref.hasPrefix("did:") ? ref : ref.hasPrefix("z6Mk") ? "did:key:" + ref : nil
    }

    /// `text` for a LIKE pattern with `ESCAPE '\'`: its backslashes, `%` and `_` match only themselves.
    static func likeEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }

    private static func unique(_ found: [Contact], _ ref: String) throws -> Contact {
        if found.count == 1 { return found[0] }
        if found.isEmpty { throw StoreError.notFound(ref) }
        throw StoreError.ambiguous(ref, candidates: found.map { "\($0.id ?? 0) \($0.name ?? "-") \($0.did)" })
    }

    /// Deletes the contact `ref` names and returns it.
    public func delete(_ ref: String) throws(StoreError) -> Contact {
        try write { db in
            let c = try Self.resolve(ref, in: db)
            _ = try Contact.deleteOne(db, key: c.id)
            return c
        }
    }

    /// Deletes the contacts `refs` name in one transaction: when one names no contact (or
    /// several), nothing is deleted. A contact named twice is deleted once; the order is the refs'.
    public func delete(_ refs: [String]) throws(StoreError) -> [Contact] {
        try write { db in
            var found: [Contact] = []
            for ref in refs {
                let c = try Self.resolve(ref, in: db)
                if !found.contains(where: { $0.id == c.id }) { found.append(c) }
            }
            for c in found { _ = try Contact.deleteOne(db, key: c.id) }
            return found
        }
    }
}
