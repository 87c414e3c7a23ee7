import Foundation
import GRDB
import Testing
import MeishiCard
import MeishiText
@testable import MeishiStore

/// The impersonation check compares names by confusable skeleton; NUL never reaches the store.
@Suite final class ImpersonationTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var path: String { dir + "/meishi.sqlite" }

    func contact(_ did: String, name: String, email: String? = nil) -> Contact {
        var fields: [FieldName: [String]] = [.name: [name]]
        if let email { fields[.email] = [email] }
        return Contact(did: did, fields: fields, level: .public, trust: .signed, source: .file, seen: 100, cardTimestamp: 100)
    }

    @Test func lookAlikeNamesAreFlagged() throws {
        let store = try ContactStore(path: path)
        let alice = try store.store(contact("did:key:z6MkAlice", name: "Alice")).contact
        let lookAlikes = ["Alice\u{200B}", "\u{410}lice", "Ａｌｉｃｅ", "aLiCe", "ALICE", "AIice", "Al\u{2060}ice"]
        for (n, name) in lookAlikes.enumerated() {
            let outcome = try store.store(contact("did:key:z6MkFake\(n)", name: name))
            #expect(outcome.conflicts.map(\.id).contains(alice.id), "\(name.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(outcome.contact.conflictIDs.contains(alice.id!))
        }
        for (n, name) in ["Alicia", "Bob", "Alice Tanaka"].enumerated() {
            #expect(try store.store(contact("did:key:z6MkHonest\(n)", name: name)).conflicts.isEmpty, "\(name)")
        }
        // The same DID under a look-alike name is an update, not an impersonation of itself.
        var newer = contact("did:key:z6MkAlice", name: "ALICE")
        newer.cardTimestamp = 200
        #expect(try store.store(newer).conflicts.map(\.did).allSatisfy { $0.hasPrefix("did:key:z6MkFake") })
    }

    @Test func migrationFillsTheSkeletonsOfStoredContacts() throws {
        do {
            let queue = try DatabaseQueue(path: path)
            try ContactStore.migrator.migrate(queue, upTo: "v1-contacts")
            try queue.write { db in
                try db.execute(sql: """
                    INSERT INTO contact (did, name, fields, level, trust, source, firstSeen, lastSeen, cardTimestamp)
                    VALUES ('did:key:z6MkOld', 'Alice', '{"name":["Alice"]}', 'public', 'signed', 'file', 1, 1, 1)
                    """)
            }
            #expect(try queue.read { db in try ContactStore.migrator.appliedMigrations(db) } == ["v1-contacts"])
        }
        let store = try ContactStore(path: path)
        let folded = try store.read { db in try String.fetchOne(db, sql: "SELECT nameSkeleton FROM contact") }
        let asTyped = try store.read { db in try String.fetchOne(db, sql: "SELECT nameSkeletonAsTyped FROM contact") }
        #expect(folded == NameSkeleton.folded("Alice") && asTyped == NameSkeleton.asTyped("Alice"))
        let outcome = try store.store(contact("did:key:z6MkNew", name: "\u{410}lice\u{200B}"))
        #expect(outcome.conflicts.map(\.did) == ["did:key:z6MkOld"])
    }

    @Test func aNULIsNeverStored() throws {
        let store = try ContactStore(path: path)
        #expect(throws: StoreError.nulCharacter(field: "name")) { try store.store(self.contact("did:key:z6MkEve", name: "Eve\u{0}Alice")) }
        #expect(throws: StoreError.nulCharacter(field: "email")) {
            try store.store(self.contact("did:key:z6MkEve", name: "Eve", email: "eve@example.org\u{0}"))
        }
        #expect(throws: StoreError.nulCharacter(field: "did")) { try store.store(self.contact("unsigned:\u{0}", name: "Eve")) }
        #expect(throws: StoreError.nulCharacter(field: "name")) { try store.insertAll([self.contact("did:key:z6MkEve", name: "\u{0}")]) }
        #expect(try store.count() == 0)
        #expect(FieldsColumn.decode(#"{"name":["Eve\u0000"]}"#) == nil)
    }
}
