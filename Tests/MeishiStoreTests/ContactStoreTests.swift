import Foundation
import GRDB
import Testing
import MeishiCard
@testable import MeishiStore

@Suite final class ContactStoreTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var path: String { dir + "/meishi.sqlite" }

    func contact(_ did: String, name: String, email: String? = nil, ts: Int64 = 100, trust: Trust = .signed) -> Contact {
        var fields: [FieldName: [String]] = [.name: [name]]
        if let email { fields[.email] = [email] }
        return Contact(did: did, fields: fields, level: .public, trust: trust, source: .file, seen: ts, cardTimestamp: ts)
    }

    @Test func createsPrivateWALDatabase() throws {
        let store = try ContactStore(path: path)
        #expect(SecureFileMode.of(path) == 0o600)
        let mode = try store.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
        _ = try store.store(contact("did:key:z6MkA", name: "A"))
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            #expect(SecureFileMode.of(path + suffix) == 0o600)
        }
    }

    @Test func newerReplacesOlderNeverTheReverse() throws {
        let store = try ContactStore(path: path)
        guard case .added(let a, let conflicts) = try store.store(contact("did:key:z6MkA", name: "Mei", ts: 100)) else {
            Issue.record("not added"); return
        }
        #expect(conflicts.isEmpty)
        guard case .updated(let b, _) = try store.store(contact("did:key:z6MkA", name: "Mei Tanaka", ts: 200, trust: .met)) else {
            Issue.record("not updated"); return
        }
        #expect(b.id == a.id && b.name == "Mei Tanaka" && b.trust == .met && b.firstSeen == 100)
        guard case .unchanged(let c) = try store.store(contact("did:key:z6MkA", name: "Old Name", ts: 150)) else {
            Issue.record("older card replaced newer"); return
        }
        #expect(c.name == "Mei Tanaka" && c.trust == .met)
        #expect(try store.resolve("did:key:z6MkA").name == "Mei Tanaka")
        #expect(try store.count() == 1)
    }

    @Test func flagsPossibleImpersonation() throws {
        let store = try ContactStore(path: path)
        _ = try store.store(contact("did:key:z6MkA", name: "Mei Tanaka", email: "mei@example.org"))
        guard case .added(let x, let byName) = try store.store(contact("did:key:z6MkB", name: "mei tanaka")) else {
            Issue.record("not added"); return
        }
        #expect(byName.map(\.did) == ["did:key:z6MkA"])
        #expect(x.conflictIDs.count == 1)
        guard case .added(_, let byEmail) = try store.store(contact("did:key:z6MkC", name: "Other", email: "MEI@example.org")) else {
            Issue.record("not added"); return
        }
        #expect(byEmail.map(\.did) == ["did:key:z6MkA"])
        #expect(try store.count() == 3)
    }

    @Test func listsFiltersAndResolves() throws {
        let store = try ContactStore(path: path)
        _ = try store.store(contact("did:key:z6MkAAA", name: "Mei Tanaka", email: "mei@example.org", trust: .met))
        _ = try store.store(contact("did:key:z6MkBBB", name: "Ken Sato"))
        _ = try store.store(contact("did:key:z6MkBBC", name: "ken_underscore"))
        #expect(try store.list(ContactQuery()).map(\.name) == ["Ken Sato", "ken_underscore", "Mei Tanaka"])
        #expect(try store.list(ContactQuery(trust: .met)).map(\.name) == ["Mei Tanaka"])
        #expect(try store.list(ContactQuery(search: "example.org")).map(\.name) == ["Mei Tanaka"])
        #expect(try store.list(ContactQuery(search: "_")).map(\.name) == ["ken_underscore"])
        #expect(try store.list(ContactQuery(limit: 1)).count == 1)
        #expect(try store.resolve("1").name == "Mei Tanaka")
        #expect(try store.resolve("did:key:z6MkAA").name == "Mei Tanaka")
        #expect(try store.resolve("z6MkAA").name == "Mei Tanaka")
        #expect(try store.resolve("mei tanaka").name == "Mei Tanaka")
        #expect(try store.resolve("Sato").name == "Ken Sato")
        #expect(throws: StoreError.self) { try store.resolve("did:key:z6MkBB") }
        #expect(throws: StoreError.notFound("Nobody")) { try store.resolve("Nobody") }
        #expect(try store.delete("Ken Sato").name == "Ken Sato")
        #expect(try store.count() == 2)
        let values = try store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM contact_value") }
        #expect(values == 1)
    }

    /// A ref of digits (or `#` and digits) is an id and nothing else: a deleted id never falls
    /// through to a name holding those digits (a tester's `contacts delete 1`, run twice, deleted
    /// "Flat 1 Tenant").
    @Test func anIDNamesThatContactOrNobody() throws {
        let store = try ContactStore(path: path)
        _ = try store.store(contact("did:key:z6MkAAA", name: "Ken Sato"))
        _ = try store.store(contact("did:key:z6MkBBB", name: "Flat 1 Tenant"))
        _ = try store.store(contact("did:key:z6MkCCC", name: "2024"))
        #expect(try store.resolve("#2").name == "Flat 1 Tenant")
        #expect(try store.resolve(" 2 ").name == "Flat 1 Tenant")
        #expect(try store.delete("1").name == "Ken Sato")
        #expect(throws: StoreError.noSuchID(1)) { try store.resolve("1") }
        #expect(throws: StoreError.noSuchID(1)) { try store.delete("#1") }
        #expect(throws: StoreError.noSuchID(2024)) { try store.resolve("2024") }
        #expect(throws: StoreError.notFound("99999999999999999999")) { try store.resolve("99999999999999999999") }
        #expect(throws: StoreError.emptyReference) { try store.resolve("  ") }
        #expect(try store.resolve("Flat 1").name == "Flat 1 Tenant")
        #expect(try store.count() == 2)
    }

    @Test func concurrentProcessesWaitInsteadOfFailing() async throws {
        let first = try ContactStore(path: path)
        let second = try ContactStore(path: path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, store) in [first, second].enumerated() {
                group.addTask {
                    for i in 0..<50 {
                        _ = try store.store(Contact(did: "did:key:z6Mk\(n)-\(i)", fields: [.name: ["P\(i)"]], level: .public,
                                                    trust: .signed, source: .file, seen: 1, cardTimestamp: 1))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try first.count() == 100)
    }

    @Test func bulkInsert() throws {
        let store = try ContactStore(path: path)
        try store.insertAll((0..<500).map { contact("did:key:z6Mk\($0)", name: "N\($0)", email: "n\($0)@example.org") })
        #expect(try store.count() == 500)
        // The bulk path and the record path write the same column through the one codec.
        let one = try store.store(contact("did:key:z6MkOne", name: "One", email: "one@example.org")).contact
        let texts = try store.read { db in try String.fetchAll(db, sql: "SELECT fields FROM contact WHERE did IN ('did:key:z6Mk7', 'did:key:z6MkOne') ORDER BY id") }
        #expect(texts == ["{\"email\":[\"n7@example.org\"],\"name\":[\"N7\"]}", "{\"email\":[\"one@example.org\"],\"name\":[\"One\"]}"])
        #expect(try store.resolve("N7").fields == [.name: ["N7"], .email: ["n7@example.org"]])
        #expect(one.fields[.email] == ["one@example.org"])
    }

    /// The listing walks the name index and stops at the limit: no sort of the whole table.
    @Test func listingUsesTheNameIndex() throws {
        let store = try ContactStore(path: path)
        try store.insertAll((0..<300).map { contact("did:key:z6Mk\($0)", name: "N\($0 % 7) \($0)", email: "n\($0)@example.org") })
        for query in [ContactQuery(limit: 50), ContactQuery(trust: .signed, limit: 50), ContactQuery(search: "n1", limit: 50)] {
            let (sql, arguments) = ContactStore.listSQL(query)
            let text = try store.read { db in try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments).map { $0["detail"] as String } }
            #expect(text.contains { $0.contains("USING INDEX contact_on_name") }, "\(text)")
            #expect(!text.contains { $0.contains("TEMP B-TREE") }, "\(text)")
        }
        let listed = try store.list(ContactQuery(limit: 50))
        let all = try store.list(ContactQuery())
        #expect(listed.count == 50 && all.count == 300)
        #expect(listed.map(\.id) == all.prefix(50).map(\.id))
        #expect(all.map { $0.name!.lowercased() } == all.map { $0.name!.lowercased() }.sorted())
        let found = try store.list(ContactQuery(trust: .signed, search: "n3 3", limit: 3))
        #expect(found.map(\.name) == ["N3 3", "N3 31", "N3 38"])
        #expect(try store.list(ContactQuery(trust: .met, limit: 50)).isEmpty)
    }

    /// A command that only reads opens the store read-only: it writes nothing (no log set-up, no
    /// migration check in a write transaction), cannot write, and is not used for a store that
    /// is missing or needs migrating.
    @Test func readOnlyOpenWritesNothing() throws {
        #expect(try ContactStore.readOnly(path: path) == nil)
        _ = try ContactStore(path: path).store(contact("did:key:z6MkA", name: "Alice"))
        func files() throws -> [Data] { try [path, path + "-wal"].map { try Data(contentsOf: URL(fileURLWithPath: $0)) } }
        let before = try files()
        let store = try #require(try ContactStore.readOnly(path: path))
        #expect(try store.list(ContactQuery(limit: 50)).map(\.name) == ["Alice"])
        #expect(try store.resolve("Alice").did == "did:key:z6MkA")
        #expect(throws: StoreError.self) { _ = try store.store(self.contact("did:key:z6MkB", name: "Bob")) }
        #expect(try files() == before)
        // A store its migrations have not reached is left to the writable open.
        let old = dir + "/old.sqlite"
        try DatabaseQueue(path: old).write { db in try db.execute(sql: "CREATE TABLE contact (id INTEGER PRIMARY KEY)") }
        #expect(try ContactStore.readOnly(path: old) == nil)
    }

    /// Many commands, each opening the store, writing once and closing it, leave a short
    /// write-ahead log: every later command reads the whole log when it opens the store. SQLite
    /// alone let it grow to about 4 MB (its automatic checkpoint starts the log anew only when
    /// the same connection writes again); the close makes no checkpoint, and each commit is on
    /// the disk by itself (synchronous FULL).
    @Test func theWriteAheadLogStaysShortAcrossCommands() throws {
        var largest = 0
        for n in 0..<400 {
            let store = try ContactStore(path: path)
            _ = try store.store(contact("did:key:z6MkLog\(n)", name: "Person \(n)", email: "p\(n)@example.org"))
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largest = max(largest, size)
        }
        #expect(largest <= ContactStore.logLimit + 256 * 1024, "the log reached \(largest) bytes")
        #expect(try ContactStore(path: path).count() == 400)
        let writer = try ContactStore(path: path)
        // Asked of the connection that commits: the pool's readers keep SQLite's default.
        #expect(try writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2, "FULL")
    }

    /// A bulk insert ends with the write-ahead log emptied: the next process would read it all.
    @Test func bulkInsertEmptiesTheWriteAheadLog() throws {
        let store = try ContactStore(path: path)
        try store.insertAll((0..<2_000).map { contact("did:key:z6Mk\($0)", name: "N\($0)", email: "n\($0)@example.org") })
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        #expect(size == 0, "\(size) bytes left in the log")
        #expect(try ContactStore(path: path).count() == 2_000)
    }

    @Test func fieldsColumnRoundTripsAndRefusesDamage() {
        let fields: [FieldName: [String]] = [.name: ["山田 太郎"], .email: ["a@example.org", "b@example.org"], try! FieldName("x-team"): ["\"q\""]]
        #expect(FieldsColumn.decode(FieldsColumn.encode(fields)) == fields)
        for damaged in ["", "[]", "{\"name\":\"A\"}", "{\"bogus\":[\"A\"]}", "{\"name\":[1]}", "{\"name\":[\"A\"],\"name\":[\"B\"]}", "{"] {
            #expect(FieldsColumn.decode(damaged) == nil, "\(damaged)")
        }
    }

    /// A row damaged behind meishi's back is an error naming the row, never an empty contact.
    @Test func damagedRowIsAnError() throws {
        let store = try ContactStore(path: path)
        let id = try store.store(contact("did:key:z6MkA", name: "Alice")).contact.id!
        _ = try store.store(contact("did:key:z6MkB", name: "Bob"))
        for (column, value) in [("fields", "not json"), ("fields", "{\"bogus\":[\"x\"]}"), ("trust", "root"), ("level", "secret")] {
            try store.write { db in try db.execute(sql: "UPDATE contact SET \(column) = ? WHERE id = ?", arguments: [value, id]) }
            #expect(throws: StoreError.damaged("contact #\(id): " + (column == "fields" ? "the fields column is not valid" : "unknown \(column)"))) {
                try store.list(ContactQuery())
            }
            try store.write { db in
                try db.execute(sql: "UPDATE contact SET fields = ?, trust = 'signed', level = 'public' WHERE id = ?",
                               arguments: [FieldsColumn.encode([.name: ["Alice"]]), id])
            }
        }
        #expect(try store.list(ContactQuery()).map(\.name) == ["Alice", "Bob"])
    }

    /// Main's migration first, then the vCard import's; both columns it adds are written and read
    /// back, and a damaged `unsignedFields` column is an error like a damaged `fields`.
    @Test func vcardImportMigrationAndItsColumns() throws {
        let store = try ContactStore(path: path)
        #expect(try store.read { db in try ContactStore.migrator.appliedMigrations(db) }
                == ["v1-contacts", "v2-name-skeleton", "v2-vcard-import", "v3-common-friends", "v3-messages", "v4-common-friends-found", "v4-message-sender-key",
                    "v5-import-merges", "v5-card-history", "v6-meetings", "v7-notes-and-tags", "v8-card-pushes", "v9-import-uid", "v10-key-rotations", "v11-spent-codes"])
        var ken = contact("did:key:z6MkKen", name: "Ken", email: "ken@example.org")
        ken.unsignedFields = [.phone: ["+81 3 0000 1111"]]
        ken.vcard = #"{"decorations":{},"properties":["BDAY:1990-01-31"]}"#
        let id = try store.store(ken).contact.id!
        let back = try store.resolve("\(id)")
        #expect(back.unsignedFields == [.phone: ["+81 3 0000 1111"]])
        #expect(back.vcard == ken.vcard)
        try store.write { db in try db.execute(sql: "UPDATE contact SET unsignedFields = '{\"phone\":[1]}' WHERE id = ?", arguments: [id]) }
        #expect(throws: StoreError.damaged("contact #\(id): the unsignedFields column is not valid")) { try store.list(ContactQuery()) }
    }

    /// `%`, `_` and backslashes in a search or a name reference match only themselves.
    @Test func likePatternsAreEscaped() throws {
        let store = try ContactStore(path: path)
        _ = try store.store(contact("did:key:z6MkA", name: "100% Ana"))
        _ = try store.store(contact("did:key:z6MkB", name: "1000 Bo"))
        _ = try store.store(contact("did:key:z6MkC", name: "a_b"))
        _ = try store.store(contact("did:key:z6MkD", name: "axb"))
        _ = try store.store(contact("did:key:z6MkE", name: "back\\slash"))
        #expect(try store.list(ContactQuery(search: "0%")).map(\.name) == ["100% Ana"])
        #expect(try store.list(ContactQuery(search: "a_b")).map(\.name) == ["a_b"])
        #expect(try store.list(ContactQuery(search: "k\\s")).map(\.name) == ["back\\slash"])
        #expect(try store.resolve("_").name == "a_b")
        #expect(try store.resolve("0%").name == "100% Ana")
        #expect(throws: StoreError.notFound("did:key:z6Mk_")) { try store.resolve("did:key:z6Mk_") }
    }
}

enum SecureFileMode {
    static func of(_ path: String) -> mode_t? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return st.st_mode & 0o777
    }
}
