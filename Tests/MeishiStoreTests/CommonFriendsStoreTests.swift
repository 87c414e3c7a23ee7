import Foundation
import GRDB
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiStore

/// The common-friends tables: candidates, a recorded comparison, and deletion cascading.
@Suite final class CommonFriendsStoreTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }

    func contact(_ did: String, _ name: String, trust: Trust = .signed, email: String? = nil, phone: String? = nil) -> Contact {
        var fields: [FieldName: [String]] = [.name: [name]]
        if let email { fields[.email] = [email] }
        if let phone { fields[.phone] = [phone] }
        return Contact(did: did, fields: fields, level: .professional, trust: trust, source: .file, seen: 1, cardTimestamp: 1)
    }

    @Test func migrationCandidatesRecordAndCascade() throws {
        let store = try ContactStore(path: dir + "/meishi.sqlite")
        #expect(try store.read { db in try ContactStore.migrator.appliedMigrations(db) }.contains("v3-common-friends"))
        let cleo = try store.store(contact("did:key:z6MkCleo", "Cleo", email: " Cleo@Example.org", phone: "+81 90 1234 5678")).contact
        let dev = try store.store(contact("did:key:z6MkDev", "Dev", phone: "090 1234 5678")).contact
        _ = try store.store(contact("did:key:z6MkGus", "Gus", trust: .unsigned, email: "gus@example.org"))
        var ken = contact("did:key:z6MkKen", "Ken")
        ken.unsignedFields = [.email: ["ken@old.example"]]
        let kenStored = try store.store(ken).contact
        // Unsigned contacts are never candidates; the peer is left out; unsigned values are never used.
        let candidates = try store.friendCandidates(excludingDID: "did:key:z6MkDev")
        #expect(candidates.map(\.did) == ["did:key:z6MkCleo", "did:key:z6MkKen"])
        #expect(candidates[0].emails == ["cleo@example.org"] && candidates[0].phones == ["+819012345678"])
        #expect(candidates[1].emails.isEmpty)
        #expect(try store.friendCandidates(excludingDID: "did:key:z6MkDev", values: false)
                == candidates.map { FriendCandidate(contactID: $0.contactID, did: $0.did, emails: [], phones: []) })
        // A national number is never a phone element.
        #expect(try store.friendCandidates(excludingDID: "").first { $0.did == "did:key:z6MkDev" }?.phones == [])

        #expect(try store.commonFriends(of: kenStored.id!) == nil)
        try store.record(FriendComparison(friendIDs: [cleo.id!, dev.id!, 999, kenStored.id!], mode: "ecdh", at: 42, peerSetSize: 7), of: kenStored.id!)
        var found = try #require(try store.commonFriends(of: kenStored.id!))
        #expect(found.friends.map(\.name) == ["Cleo", "Dev"] && found.mode == "ecdh" && found.at == 42 && found.peerSetSize == 7)
        _ = try store.delete("Cleo")
        found = try #require(try store.commonFriends(of: kenStored.id!))
        #expect(found.friends.map(\.name) == ["Dev"])
        #expect(found.found == 2 && found.deletedSince == 1, "Cleo was found, then deleted: the listing can say so")
        // Re-adding Cleo does not bring the old match back: it is counted as deleted since.
        _ = try store.store(contact("did:key:z6MkCleo", "Cleo"))
        #expect(try store.commonFriends(of: kenStored.id!)?.deletedSince == 1)
        let counts = try store.commonFriendCounts()
        #expect(counts.first { $0.contact.name == "Ken" }?.shared == 1 && counts.first { $0.contact.name == "Dev" }?.shared == nil)
        // A later comparison replaces the earlier one; deleting the contact removes its comparison.
        try store.record(FriendComparison(friendIDs: [], mode: "hash", at: 43, peerSetSize: 1), of: kenStored.id!)
        #expect(try store.commonFriends(of: kenStored.id!)?.friends.isEmpty == true)
        _ = try store.delete("Ken")
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM friend_comparison") } == 0)
    }
}
