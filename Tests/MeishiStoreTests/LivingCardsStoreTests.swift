import Foundation
import GRDB
import Testing
import MeishiCard
@testable import MeishiStore

/// Issue 26 (the store's part): meetings, typed sources kept as the text the store always held.
@Suite final class LivingCardsStoreTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var path: String { dir + "/meishi.sqlite" }

    /// Contacts stored before meetings were recorded get one: their first-seen time, by the way
    /// their card came; the source column keeps its text.
    @Test func meetingsMigrationCarriesStoredContacts() throws {
        let queue = try DatabaseQueue(path: path)
        try ContactStore.migrator.migrate(queue, upTo: "v5-card-history")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO contact (did, name, fields, level, trust, source, firstSeen, lastSeen, cardTimestamp, pubKey)
                VALUES ('did:key:z6MkKen', 'Ken', '{"name":["Ken"]}', 'professional', 'met', 'exchange', 10, 20, 15, randomblob(32)),
                       ('unsigned:abc', 'Vee', '{"name":["Vee"]}', 'public', 'unsigned', 'vcard', 11, 20, 15, NULL),
                       ('unsigned:def', 'Qi', '{"name":["Qi"]}', 'public', 'unsigned', 'qr-mecard', 12, 20, 15, NULL),
                       ('did:key:z6MkFay', 'Fay', '{"name":["Fay"]}', 'public', 'signed', 'stdin', 13, 20, 15, randomblob(32))
                """)
        }
        try queue.close()
        let store = try ContactStore(path: path)
        func met(_ ref: String) throws -> [Meeting] { try store.meetings(of: try store.resolve(ref).id!) }
        #expect(try met("Ken").map(\.how) == [.exchange] && (try met("Ken")).first?.at == 10)
        #expect(try met("Vee").map(\.how) == [.import])
        #expect(try met("Qi").map(\.how) == [.qr])
        #expect(try met("Fay").map(\.how) == [.file])
        #expect(try store.resolve("Qi").source == .qrMECARD && (try store.resolve("Fay")).source == .stdin)
        // Ken, met at an exchange before meetings were recorded, holds a card of mine: a push
        // target, at an unknown level (card push falls back to --level or the configured one).
        #expect(try store.pushTargets().map(\.name) == ["Ken"])
        #expect(try store.lastGivenLevel(to: try store.resolve("Ken").id!) == nil)
    }

    /// `store(_:meeting:)` records the meeting with the card, an unchanged card too; `list`
    /// filters by event (part of the name, any case); an import records one per card it changed.
    @Test func meetingsAreRecordedAndFiltered() throws {
        let store = try ContactStore(path: path)
        let ken = Contact(did: "did:key:z6MkKen", fields: [.name: ["Ken Sato"]], level: .public, trust: .signed, source: .file,
                          seen: 100, cardTimestamp: 100)
        _ = try store.store(ken, meeting: Meeting(at: 100, how: .file, event: "PyCon JP 2026"))
        _ = try store.store(ken, meeting: Meeting(at: 200, how: .code))
        let id = try store.resolve("Ken").id!
        #expect(try store.meetings(of: id) == [Meeting(contactID: id, at: 100, how: .file, event: "PyCon JP 2026"),
                                              Meeting(contactID: id, at: 200, how: .code)].enumerated().map {
            var m = $0.element; m.id = Int64($0.offset + 1); return m
        })
        let vee = UnsignedCard(ImportedContact(fields: [.name: ["Vee"], .email: ["vee@example.org"]], format: .mecard), key: "unsigned:vee")
        _ = try store.importUnsigned([vee], merge: true, source: .qr(.mecard), seen: 300, meeting: .qr, event: "RubyKaigi", dryRun: false)
        _ = try store.importUnsigned([vee], merge: true, source: .qr(.mecard), seen: 400, meeting: .qr, event: "RubyKaigi", dryRun: false)
        let veeID = try store.resolve("Vee").id!
        #expect(try store.meetings(of: veeID).map(\.at) == [300], "an unchanged import records no meeting")
        #expect(try store.resolve("Vee").source == .qrMECARD)
        #expect(try store.list(ContactQuery(event: "pycon")).map(\.name) == ["Ken Sato"])
        #expect(try store.list(ContactQuery(event: "KAIGI")).map(\.name) == ["Vee"])
        #expect(try store.list(ContactQuery(event: "%")).isEmpty, "LIKE wildcards match themselves")
        #expect(try store.list(ContactQuery(event: "Nowhere")).isEmpty)
    }

    /// The text a source is stored as is what older versions wrote; an unknown one is damage.
    @Test func sourcesKeepTheirStoredText() throws {
        #expect(ContactSource.allCases.map(\.rawValue) == ["file", "stdin", "vcard", "exchange", "qr", "qr-vcard", "qr-mecard",
                                                            "qr-solidarity", "qr-airmeishi", "solidarity", "push"])
        #expect(ContactSource.qr(.vcard(version: "4.0")) == .qrVCard && ContactSource.qr(.airmeishiLink) == .qrAirmeishi
                && ContactSource.qr(.solidarityLink) == .qrSolidarity && ContactSource.qr(.solidarityEnvelope) == .qrSolidarity)
        let store = try ContactStore(path: path)
        _ = try store.store(Contact(did: "did:key:z6MkX", fields: [.name: ["X"]], level: .public, trust: .signed, source: .file,
                                    seen: 1, cardTimestamp: 1))
        try store.write { db in try db.execute(sql: "UPDATE contact SET source = 'carrier-pigeon'") }
        #expect(throws: StoreError.self) { try store.resolve("X") }
    }
}
