import Foundation
import GRDB
import Testing
import MeishiCard
@testable import MeishiStore

/// Issue 21 (the store's part): imports merge the same person only, a merge can be undone, every
/// signed card is kept; issue 22 finding 2: many look-alikes import in linear work.
@Suite final class NothingLostStoreTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var path: String { dir + "/meishi.sqlite" }

    func card(_ name: String?, email: [String] = [], phone: [String] = [], key: String? = nil) -> UnsignedCard {
        var fields: [FieldName: [String]] = [:]
        if let name { fields[.name] = [name] }
        if !email.isEmpty { fields[.email] = email }
        if !phone.isEmpty { fields[.phone] = phone }
        let k = key ?? "unsigned:" + ([name ?? ""] + email + phone).joined(separator: "|")
        return UnsignedCard(ImportedContact(fields: fields, format: .vcard(version: "3.0")), key: k)
    }

    func importing(_ store: ContactStore, _ cards: [UnsignedCard], merge: Bool = true, dryRun: Bool = false) throws -> [ImportOutcome] {
        try store.importUnsigned(cards, merge: merge, source: .vcard, seen: 1_000, dryRun: dryRun)
    }

    /// The family file: Alice and Bob Smith share the home phone. Bob stays Bob, and the import
    /// says what he shares with whom; a second card of Alice's with that phone merges into her.
    @Test func aSharedPhoneUnderAnotherNameKeepsThemApart() throws {
        let store = try ContactStore(path: path)
        let out = try importing(store, [
            card("Alice Smith", email: ["alice@smith.example"], phone: ["+1 555 0100"]),
            card("Bob Smith", email: ["bob@smith.example"], phone: ["+1 555 0100"]),
            card("ALICE  SMITH", email: ["alice@work.example"], phone: ["+1 555 0100"]),
        ])
        guard case .imported(let alice, _, let none) = out[0], case .imported(let bob, _, let sharing) = out[1] else {
            Issue.record("Alice or Bob was not imported on their own: \(out)"); return
        }
        #expect(none.isEmpty)
        #expect(bob.fields[.name] == ["Bob Smith"] && bob.id != alice.id)
        #expect(sharing == [SharedValue(field: .phone, value: "+1 555 0100", contactID: alice.id!, contactName: "Alice Smith")])
        guard case .merged(let merged, let added) = out[2] else { Issue.record("Alice's second card did not merge: \(out[2])"); return }
        #expect(merged.id == alice.id && added == [.email: ["alice@work.example"]])
        #expect(try store.count() == 2)
        #expect(try store.resolve("Bob Smith").fields[.email] == ["bob@smith.example"])
    }

    /// A switchboard number many contacts of other names share never hides the one of the same
    /// name: the same person's second card still merges into them.
    @Test func aCommonNumberDoesNotHideTheSamePerson() throws {
        let store = try ContactStore(path: path)
        _ = try importing(store, (0..<250).map { card("Staff \($0)", phone: ["+1 555 0000"]) })
        _ = try importing(store, [card("Zed Park", email: ["zed@acme.example"], phone: ["+1 555 0000"])])
        let out = try importing(store, [card("Zed Park", email: ["zed@home.example"], phone: ["+1 555 0000"])])
        guard case .merged(let zed, let added) = out[0] else { Issue.record("not merged: \(out[0])"); return }
        #expect(zed.id == 251 && added == [.email: ["zed@home.example"]])
        guard case .imported(_, _, let sharing) = try importing(store, [card("Ann New", phone: ["+1 555 0000"])])[0] else {
            Issue.record("merged into someone else"); return
        }
        #expect(sharing.map(\.contactID) == [1, 2, 3])
    }

    /// Two colleagues sharing info@acme.example are two contacts; `--no-merge` keeps even the
    /// same person apart; a dry run decides the same and stores nothing.
    @Test func colleaguesSharingAnAddressStayTwo() throws {
        let store = try ContactStore(path: path)
        let cards = [card("Dana Lee", email: ["info@acme.example"]), card("Eli Ortiz", email: ["INFO@acme.example", "eli@acme.example"])]
        let dry = try importing(store, cards, dryRun: true)
        #expect(dry.map(\.name) == ["imported", "imported"])
        #expect(try store.count() == 0)
        let out = try importing(store, cards)
        guard case .imported(_, _, let sharing) = out[1] else { Issue.record("merged: \(out[1])"); return }
        #expect(sharing.map(\.value) == ["INFO@acme.example"] && sharing.map(\.contactName) == ["Dana Lee"])
        #expect(try store.count() == 2)
        let apart = try importing(store, [card("Dana Lee", email: ["info@acme.example", "dana@acme.example"], key: "unsigned:other")], merge: false)
        #expect(apart.map(\.name) == ["imported"])
    }

    /// A recorded merge is undone newest first: the values it added leave the contact and the
    /// card stands alone again; with none recorded (a merge before they were), split says so.
    @Test func splitUndoesTheLatestMerge() throws {
        let store = try ContactStore(path: path)
        _ = try importing(store, [card("Alice Smith", email: ["alice@smith.example"], phone: ["+1 555 0100"])])
        _ = try importing(store, [card("Alice Smith", email: ["alice@work.example"], phone: ["+1 555 0100", "+1 555 0199"])])
        let joined = try store.resolve("Alice Smith")
        #expect(joined.fields[.email] == ["alice@smith.example", "alice@work.example"] && joined.fields[.phone]?.count == 2)
        let split = try store.split("Alice Smith", now: 2_000)
        #expect(split.remaining.fields == [.name: ["Alice Smith"], .email: ["alice@smith.example"], .phone: ["+1 555 0100"]])
        #expect(split.separated.fields[.email] == ["alice@work.example"] && split.separated.fields[.phone]?.count == 2)
        #expect(split.removed == [.email: ["alice@work.example"], .phone: ["+1 555 0199"]] && split.mergesLeft == 0)
        #expect(try store.count() == 2)
        // Its emails and phones are searchable again under the right contact.
        #expect(try store.list(ContactQuery(search: "0199")).map(\.id) == [split.separated.id])
        #expect(throws: StoreError.nothingToSplit(id: split.remaining.id!, name: "Alice Smith", .allUndone(count: 1))) {
            try store.split("\(split.remaining.id!)", now: 2_000)
        }
    }

    /// Issue 21 finding 5: with nothing to undo, split says why. An unsigned contact no import
    /// changed after the one that made it, or a signed one without unsigned information, was never
    /// merged; one an import touched later (an older version moved last-seen on a merge), or a
    /// signed one holding unsigned information, may hold merges an older version did not record.
    @Test func splitTellsNeverMergedFromUnrecorded() throws {
        let store = try ContactStore(path: path)
        _ = try importing(store, [card("Bob Smith", email: ["bob@smith.example"]), card("Vee Old", email: ["vee@old.example"])])
        _ = try store.store(Contact(did: "did:key:z6MkKen", fields: [.name: ["Ken"]], level: .public, trust: .met, source: .exchange,
                                    seen: 500, cardTimestamp: 400, payload: Data("k".utf8)))
        _ = try store.store(Contact(did: "did:key:z6MkMei", fields: [.name: ["Mei"]], level: .public, trust: .met, source: .exchange,
                                    seen: 500, cardTimestamp: 400, payload: Data("m".utf8)))
        try store.write { db in
            try db.execute(sql: "UPDATE contact SET lastSeen = lastSeen + 100 WHERE name = 'Vee Old'")
            try db.execute(sql: #"UPDATE contact SET unsignedFields = '{"phone":["+1 555 0100"]}' WHERE name = 'Mei'"#)
        }
        for (ref, why) in [("Bob Smith", NothingToSplit.neverMerged), ("Ken", .neverMerged), ("Vee Old", .unrecorded), ("Mei", .unrecorded)] {
            let c = try store.resolve(ref)
            #expect(throws: StoreError.nothingToSplit(id: c.id!, name: c.name, why)) { try store.split(ref, now: 2_000) }
        }
    }

    /// Issue 22 finding 2: 2,000 cards named Alice (distinct emails) each rewrote the look-alike
    /// list of every earlier one, quadratic in rows written and in list length (2,000 took over
    /// 7.5 minutes and 5.5 GB). Each contact now records at most `maximumLookAlikes` of them each
    /// way, so the work per card is bounded; the first Alice still names her first look-alikes.
    @Test(.timeLimit(.minutes(5))) func manyCardsOfOneNameImportInLinearWork() throws {
        let store = try ContactStore(path: path)
        let cards = (0..<2000).map { card("Alice", email: ["alice\($0)@example.org"]) }
        let out = try importing(store, cards)
        #expect(out.allSatisfy { $0.name == "imported" })
        let lists = try store.read { db in try String?.fetchAll(db, sql: "SELECT conflictsWith FROM contact ORDER BY id") }
        let lengths = lists.map { ($0 ?? "").split(separator: ",").count }
        #expect(lengths.count == 2000)
        #expect(lengths.max()! <= 2 * ContactStore.maximumLookAlikes, "a look-alike list of \(lengths.max()!) ids")
        let first = try store.resolve("1")
        #expect(first.laterLookAlikes == Array(2...Int64(1 + ContactStore.maximumLookAlikes)))
        let last = try store.resolve("2000")
        #expect(last.earlierLookAlikes == Array(1...Int64(ContactStore.maximumLookAlikes)))
    }

    func signed(_ fields: [FieldName: [String]], ts: Int64, level: DisclosureLevel = .professional, payload: String) -> Contact {
        Contact(did: "did:key:z6MkMei", fields: fields, level: level, trust: .met, source: .exchange, seen: ts + 5, cardTimestamp: ts,
                payload: Data(payload.utf8))
    }

    /// Issue 21 seen 2: Ken holds Mei's professional card (email, two phones); her newer public
    /// card shares neither. Both cards are kept; the old values stay, apart from the current ones,
    /// and the outcome says what changed. An older card arriving later is kept too, once.
    @Test func aNewerCardThatSharesLessErasesNothing() throws {
        let store = try ContactStore(path: path)
        let professional = signed([.name: ["Mei Tanaka"], .title: ["Engineer"], .email: ["mei@example.org"],
                                   .phone: ["+81 90 1234 5678", "+81 3 1234 5678"]], ts: 100, payload: "card-1")
        _ = try store.store(professional)
        let outcome = try store.store(signed([.name: ["Mei Tanaka"], .title: ["Lead"], .url: ["https://mei.example"]], ts: 200,
                                             level: .public, payload: "card-2"))
        guard case .updated(let mei, _) = outcome else { Issue.record("not updated: \(outcome)"); return }
        #expect(mei.changes == [.changed(.title), .withdrawn(.email, count: 1, all: true), .withdrawn(.phone, count: 2, all: true),
                                .added(.url, count: 1), .level(from: .professional, to: .public)])
        let back = try store.resolve("Mei")
        #expect(back.fields[.email] == nil)
        #expect(back.earlierFields == [.email: ["mei@example.org"], .phone: ["+81 90 1234 5678", "+81 3 1234 5678"]])
        let history = try store.history(of: back.id!)
        #expect(history.map(\.payload) == [Data("card-2".utf8), Data("card-1".utf8)])
        #expect(history.map(\.source) == [.exchange, .exchange] && history.map(\.received) == [205, 105])
        let earlier = try store.earlierValues(of: back)
        #expect(earlier.count == 1 && earlier[0].card.cardTimestamp == 100 && earlier[0].fields == back.earlierFields)
        // The old card again (a QR photo of it): unchanged, not kept twice.
        guard case .unchanged = try store.store(professional) else { Issue.record("an older card replaced a newer one"); return }
        #expect(try store.history(of: back.id!).count == 2)
        // A third card giving the email back: it is current again, no longer "earlier".
        _ = try store.store(signed([.name: ["Mei Tanaka"], .email: ["MEI@example.org"]], ts: 300, payload: "card-3"))
        #expect(try store.resolve("Mei").earlierFields == [.phone: ["+81 90 1234 5678", "+81 3 1234 5678"], .title: ["Lead"],
                                                          .url: ["https://mei.example"]])
    }

    /// Trial 7, F18: every push of the same card signed again was kept (16 KiB each, a contact
    /// could grow the listener's store without bound). The same fields under the same key as
    /// the newest kept card are not kept again, and a contact's history holds at most
    /// `maximumHistoryPerContact` cards: the first one received and the newest others.
    @Test func theSameCardSignedAgainIsNotKeptAndTheHistoryIsCapped() throws {
        let store = try ContactStore(path: path)
        let fields: [FieldName: [String]] = [.name: ["Mei Tanaka"], .email: ["mei@example.org"]]
        _ = try store.store(signed(fields, ts: 100, payload: "card-100"))
        for ts in Int64(101)...110 { _ = try store.store(signed(fields, ts: ts, payload: "card-\(ts)")) }
        #expect(try store.history(of: 1).map(\.payload) == [Data("card-100".utf8)])
        #expect(try store.resolve("1").cardTimestamp == 110, "the contact holds the newest card")
        let cap = ContactStore.maximumHistoryPerContact
        for ts in Int64(200)..<Int64(200 + 2 * cap) {
            _ = try store.store(signed([.name: ["Mei Tanaka"], .title: ["Title \(ts)"]], ts: ts, payload: "card-\(ts)"))
        }
        let history = try store.history(of: 1)
        #expect(history.count == cap)
        #expect(history.first?.payload == Data("card-\(200 + 2 * cap - 1)".utf8))
        #expect(history.last?.payload == Data("card-100".utf8), "the first card received (first seen) is kept")
        #expect(history.dropLast().last?.cardTimestamp == Int64(200 + 2 * cap - (cap - 1)))
    }

    /// A card stored without its history row (`insertAll`, the bulk path) is kept when a newer
    /// one replaces it, so what it said is not lost either.
    @Test func aCardStoredInBulkIsKeptWhenReplaced() throws {
        let store = try ContactStore(path: path)
        try store.insertAll([signed([.name: ["Mei Tanaka"], .email: ["mei@example.org"]], ts: 100, payload: "bulk")])
        #expect(try store.history(of: 1).isEmpty)
        _ = try store.store(signed([.name: ["Mei Tanaka"]], ts: 200, level: .public, payload: "newer"))
        #expect(try store.history(of: 1).map(\.payload) == [Data("newer".utf8), Data("bulk".utf8)])
        #expect(try store.history(of: 1).map(\.received) == [205, 105])
        #expect(try store.resolve("1").earlierFields == [.email: ["mei@example.org"]])
    }

    /// `v5-card-history` carries the card every verified contact held into its history; the
    /// migrations live in one list, in their shipped order.
    @Test func historyMigrationCarriesStoredCards() throws {
        let queue = try DatabaseQueue(path: path)
        try ContactStore.migrator.migrate(queue, upTo: "v4-message-sender-key")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO contact (did, name, fields, level, trust, source, firstSeen, lastSeen, cardTimestamp, payload)
                VALUES ('did:key:z6MkKen', 'Ken', '{"email":["ken@example.org"],"name":["Ken"]}', 'professional', 'met', 'exchange', 10, 20, 15, X'7b7d'),
                       ('unsigned:abc', 'Vee', '{"name":["Vee"]}', 'public', 'unsigned', 'vcard', 10, 20, 15, NULL)
                """)
        }
        try queue.close()
        let store = try ContactStore(path: path)
        #expect(try store.read { db in try ContactStore.migrator.appliedMigrations(db) }
                == ["v1-contacts", "v2-name-skeleton", "v2-vcard-import", "v3-common-friends", "v3-messages", "v4-common-friends-found",
                    "v4-message-sender-key", "v5-import-merges", "v5-card-history", "v6-meetings", "v7-notes-and-tags", "v8-card-pushes", "v9-import-uid", "v10-key-rotations", "v11-spent-codes"])
        let ken = try store.resolve("Ken")
        let history = try store.history(of: ken.id!)
        #expect(history.count == 1)
        #expect(history.first?.payload == Data("{}".utf8) && history.first?.received == 20 && history.first?.fields == ken.fields)
        #expect(try store.history(of: try store.resolve("Vee").id!).isEmpty)
        // v9-import-uid: an unsigned contact keeps the UID its exports carried, and its card
        // imported again (found under the key it was stored under then) is unchanged.
        let vee = try store.resolve("Vee")
        #expect(vee.uid == Contact.uuidURN("unsigned:abc") && vee.exportUID == vee.uid)
        let again = try store.importUnsigned([UnsignedCard(ImportedContact(fields: [.name: ["Vee"]], format: .vcard(version: "3.0")), key: "unsigned:card:new",
                                                           formerKey: "unsigned:abc")], merge: false, source: .vcard, seen: 30, dryRun: false)
        #expect(again == [.unchanged(vee)])
    }
}
