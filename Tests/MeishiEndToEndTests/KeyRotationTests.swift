import Foundation
import Testing
@testable import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiProximity
import MeishiStore

/// Issue 26: `id rotate`, and what a contact holding the old DID makes of the statement.
@Suite struct KeyRotationTests {
    static let t0: Int64 = 1_800_000_000

    /// A key pair of a person at one point of a rotation chain.
    static func identity() -> Identity { Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey()) }

    /// `who`'s card signed at `at`.
    static func card(of who: Identity, name: String = "Mei Tanaka", title: String = "Lead", at: Int64) throws -> [UInt8] {
        var card = Card()
        try card.set(.name, name)
        try card.set(.title, title)
        return try CardService.sign(card, level: .public, only: nil, identity: who, now: at).bytes
    }

    /// Ken's store holding Mei's first key as a contact met at an exchange, with a note, a tag, a meeting and a history.
    static func kenHolding(_ mei: Identity) throws -> (MessagePerson, ContactStore, Int64) {
        let ken = try MessagePerson("Ken")
        let store = try ken.store(now: t0)
        let card = try CardVerifier(clock: { t0 }).verify(try Self.card(of: mei, title: "Engineer", at: t0 - 100))
        let id = try store.store(Contact(card: card, trust: .met, source: .exchange, seen: t0 - 100),
                                 meeting: Meeting(at: t0 - 100, how: .code, event: "PyCon JP 2026", gave: .professional)).contact.id!
        _ = try store.setPrivateNotes(PrivateNotes(note: "owes me a coffee", tags: ["python"]), of: id)
        return (ken, store, id)
    }

    static func accept(_ chain: [RotationStatement], card: [UInt8], from sender: String, _ store: ContactStore, now: Int64 = t0)
        -> (CardPushVerdict, RotationApplied?) {
        CardPushService.acceptRotation(chain.flatMap(\.bytes), card: card, from: sender, store: store, now: now,
                                       verifier: CardVerifier(clock: { now }))
    }

    /// The contact moves to the new DID and keeps its note, tags, meeting, earlier card and trust;
    /// the same statement again is a replay; a card of the old key is superseded from then on,
    /// whether pushed (a push racing the rotation) or added from an old QR code or file.
    @Test func aRotationMovesTheContactAndKeepsEverything() throws {
        let old = Self.identity(), new = Self.identity()
        let (_, store, id) = try Self.kenHolding(old)
        let statement = RotationStatement.sign(old: old.signingKey, new: new.signingKey, time: Self.t0 - 10)
        let (verdict, applied) = Self.accept([statement], card: try Self.card(of: new, at: Self.t0 - 5), from: old.did, store)
        #expect(verdict == .stored(timestamp: Self.t0 - 5))
        let moved = try #require(applied)
        #expect(moved.from == old.did && moved.contact.id == id && moved.contact.did == new.did)
        let c = try #require(try store.contact(did: new.did))
        #expect(c.id == id && c.trust == .met && c.pubKey == new.boxKey.publicKey && c.signPubKey == new.signingKey.publicKey)
        #expect(try store.contact(did: old.did) == nil)
        #expect(try store.privateNotes(of: id) == PrivateNotes(note: "owes me a coffee", tags: ["python"]))
        #expect(try store.meetings(of: id).map(\.event) == ["PyCon JP 2026"])
        #expect(try store.history(of: id).map(\.cardTimestamp) == [Self.t0 - 5, Self.t0 - 100])
        #expect(try store.rotations(of: id).map { [$0.oldDID, $0.newDID] } == [[old.did, new.did]])
        #expect(try store.rotations(of: id).first?.statement == statement.bytes)

        // Sent again (only the old key's holder can: Noise KK): acknowledged again, nothing changes;
        // the same rotation with another card is refused as applied.
        #expect(Self.accept([statement], card: try Self.card(of: new, at: Self.t0 - 5), from: old.did, store).0 == .stored(timestamp: Self.t0 - 5))
        #expect(try store.history(of: id).map(\.cardTimestamp) == [Self.t0 - 5, Self.t0 - 100])
        #expect(Self.accept([statement], card: try Self.card(of: new, at: Self.t0 - 3), from: old.did, store).0 == .refused(.rotationApplied))
        // A card pushed under the old key after the rotation (a push racing it, or a thief).
        #expect(CardPushService.accept(try Self.card(of: old, title: "CEO", at: Self.t0 - 1), from: old.did, store: store, now: Self.t0,
                                       verifier: CardVerifier(clock: { Self.t0 })).0 == .refused(.superseded))
        // An old QR code or file of the first key is never a new contact.
        let oldCard = try CardVerifier(clock: { Self.t0 }).verify(try Self.card(of: old, at: Self.t0 - 100))
        #expect(throws: StoreError.superseded(did: old.did, newDID: new.did, at: Self.t0 - 10, contactID: id)) {
            try store.store(Contact(card: oldCard, trust: .signed, source: .qr, seen: Self.t0))
        }
        #expect(try store.count() == 1)
    }

    /// A statement signed by the old key alone (the new key's signature by another key, or the
    /// old key's by the new) is refused, as is one whose time was changed: nothing moves.
    @Test func aStatementWithOneBadSignatureIsRefused() throws {
        let old = Self.identity(), new = Self.identity(), other = Self.identity()
        let (_, store, id) = try Self.kenHolding(old)
        let good = RotationStatement.sign(old: old.signingKey, new: new.signingKey, time: Self.t0 - 10)
        let input = RotationStatement.signingInput(oldDID: old.did, newDID: new.did, time: Self.t0 - 10)
        let oldAlone = RotationStatement(oldDID: old.did, newDID: new.did, time: Self.t0 - 10, oldSignature: good.oldSignature,
                                         newSignature: other.signingKey.signature(for: input))
        let newAlone = RotationStatement(oldDID: old.did, newDID: new.did, time: Self.t0 - 10, oldSignature: new.signingKey.signature(for: input),
                                         newSignature: good.newSignature)
        let retimed = RotationStatement(oldDID: old.did, newDID: new.did, time: Self.t0 - 9, oldSignature: good.oldSignature,
                                        newSignature: good.newSignature)
        #expect(throws: RotationStatement.Failure.badNewSignature) { try RotationStatement.verify(oldAlone.bytes) }
        #expect(throws: RotationStatement.Failure.badOldSignature) { try RotationStatement.verify(newAlone.bytes) }
        #expect(throws: RotationStatement.Failure.badOldSignature) { try RotationStatement.verify(retimed.bytes) }
        let card = try Self.card(of: new, at: Self.t0 - 5)
        for bad in [oldAlone, newAlone, retimed] {
            #expect(Self.accept([bad], card: card, from: old.did, store).0 == .refused(.invalidRotation))
        }
        #expect(try store.contact(did: old.did)?.id == id && store.rotations(of: id).isEmpty)
        // The card must be the new key's.
        #expect(Self.accept([good], card: try Self.card(of: other, at: Self.t0 - 5), from: old.did, store).0 == .refused(.otherDID))
        #expect(try store.contact(did: old.did)?.id == id)
    }

    /// A statement for a DID the sender never held here is refused; a second rotation of a key
    /// already replaced (a thief holding the old key, rotating after the owner) is superseded; a
    /// statement older than the contact's last rotation is not newer.
    @Test func statementsOfOtherKeysAndOlderOnesAreRefused() throws {
        let mei = Self.identity(), meiNew = Self.identity(), eve = Self.identity(), eveNew = Self.identity(), thief = Self.identity()
        let (_, store, id) = try Self.kenHolding(mei)
        let eves = RotationStatement.sign(old: eve.signingKey, new: eveNew.signingKey, time: Self.t0 - 10)
        #expect(Self.accept([eves], card: try Self.card(of: eveNew, at: Self.t0 - 5), from: mei.did, store).0 == .refused(.rotationOfUnknownKey))
        let owners = RotationStatement.sign(old: mei.signingKey, new: meiNew.signingKey, time: Self.t0 - 10)
        #expect(Self.accept([owners], card: try Self.card(of: meiNew, at: Self.t0 - 5), from: mei.did, store).0 == .stored(timestamp: Self.t0 - 5))
        let thiefs = RotationStatement.sign(old: mei.signingKey, new: thief.signingKey, time: Self.t0 - 1)
        #expect(Self.accept([thiefs], card: try Self.card(of: thief, at: Self.t0), from: mei.did, store).0 == .refused(.superseded))
        #expect(try store.contact(did: thief.did) == nil && store.contact(did: meiNew.did)?.id == id)
        // Older than the rotation Ken applied: meiNew → next signed "before" mei → meiNew.
        let next = Self.identity()
        let older = RotationStatement.sign(old: meiNew.signingKey, new: next.signingKey, time: Self.t0 - 20)
        #expect(Self.accept([older], card: try Self.card(of: next, at: Self.t0), from: meiNew.did, store).0 == .refused(.notNewer))
        #expect(try store.contact(did: meiNew.did)?.id == id)
    }

    /// Two rotations in a row: a contact holding the first key takes the whole chain to the
    /// third; one that applied the first rotation takes the second from the middle key.
    @Test func aChainOfTwoRotationsIsFollowed() throws {
        let a = Self.identity(), b = Self.identity(), c = Self.identity()
        let ab = RotationStatement.sign(old: a.signingKey, new: b.signingKey, time: Self.t0 - 20)
        let bc = RotationStatement.sign(old: b.signingKey, new: c.signingKey, time: Self.t0 - 10)
        let card = try Self.card(of: c, at: Self.t0 - 5)
        let (_, ken, kenID) = try Self.kenHolding(a)
        #expect(Self.accept([ab, bc], card: card, from: a.did, ken).0 == .stored(timestamp: Self.t0 - 5))
        #expect(try ken.contact(did: c.did)?.id == kenID && ken.rotations(of: kenID).map(\.newDID) == [b.did, c.did])
        let (_, ann, annID) = try Self.kenHolding(a)
        #expect(Self.accept([ab], card: try Self.card(of: b, at: Self.t0 - 15), from: a.did, ann).0 == .stored(timestamp: Self.t0 - 15))
        #expect(Self.accept([ab, bc], card: card, from: b.did, ann).0 == .stored(timestamp: Self.t0 - 5))
        #expect(try ann.contact(did: c.did)?.id == annID && ann.rotations(of: annID).map(\.oldDID) == [a.did, b.did])
        // Out of order is not a chain.
        #expect(Self.accept([bc, ab], card: card, from: a.did, try Self.kenHolding(a).1).0 == .refused(.invalidRotation))
    }

    /// A card of the new key that arrived before its statement (pushed under the new key, which
    /// the listener does not know yet, it is refused; met again at an exchange, it became a
    /// contact of its own): the statement then folds that contact into the one it moves.
    /// A rotation pushed again because its answer was lost on the way back (a loaded listener cut
    /// the connection after applying it, found by CI) is acknowledged again and changes nothing;
    /// another card under the applied rotation is still refused.
    @Test func aRotationPushedAgainIsAcknowledgedAgain() throws {
        let old = Self.identity(), new = Self.identity()
        let (_, store, id) = try Self.kenHolding(old)
        let statement = RotationStatement.sign(old: old.signingKey, new: new.signingKey, time: Self.t0 - 10)
        let card = try Self.card(of: new, at: Self.t0 - 5)
        #expect(Self.accept([statement], card: card, from: old.did, store).0 == .stored(timestamp: Self.t0 - 5))
        let history = try store.history(of: id).count
        #expect(Self.accept([statement], card: card, from: old.did, store).0 == .stored(timestamp: Self.t0 - 5))
        #expect(try store.history(of: id).count == history)
        #expect(Self.accept([statement], card: try Self.card(of: new, at: Self.t0 - 4), from: old.did, store).0 == .refused(.rotationApplied))
    }

    @Test func aNewKeyMetBeforeItsStatementIsFoldedIn() throws {
        let old = Self.identity(), new = Self.identity()
        let (_, store, id) = try Self.kenHolding(old)
        let early = try Self.card(of: new, title: "Lead", at: Self.t0 - 8)
        #expect(CardPushService.accept(early, from: new.did, store: store, now: Self.t0, verifier: CardVerifier(clock: { Self.t0 })).0
                == .refused(.unknownSender))
        let met = try CardVerifier(clock: { Self.t0 }).verify(early)
        let other = try store.store(Contact(card: met, trust: .signed, source: .qr, seen: Self.t0 - 8),
                                    meeting: Meeting(at: Self.t0 - 8, how: .qr)).contact.id!
        #expect(other != id)
        // Common friends found with the new key before the statement came, and the new key as
        // someone else's common friend, stay after the fold (issue 26: "keeping … common-friends results").
        let ann = Self.identity()
        let annCard = try CardVerifier(clock: { Self.t0 }).verify(try Self.card(of: ann, name: "Ann Lee", at: Self.t0 - 9))
        let annID = try store.store(Contact(card: annCard, trust: .met, source: .exchange, seen: Self.t0 - 9)).contact.id!
        try store.record(FriendComparison(friendIDs: [annID], mode: "ecdh", at: Self.t0 - 8, peerSetSize: 3), of: other)
        try store.record(FriendComparison(friendIDs: [other], mode: "ecdh", at: Self.t0 - 9, peerSetSize: 3), of: annID)
        let statement = RotationStatement.sign(old: old.signingKey, new: new.signingKey, time: Self.t0 - 10)
        #expect(Self.accept([statement], card: try Self.card(of: new, at: Self.t0 - 5), from: old.did, store).0 == .stored(timestamp: Self.t0 - 5))
        #expect(try store.count() == 2)
        #expect(try store.commonFriends(of: id)?.friends.map(\.id) == [annID])
        #expect(try store.commonFriends(of: annID)?.friends.map(\.id) == [id])
        let c = try #require(try store.contact(did: new.did))
        #expect(c.id == id && c.trust == .met)
        #expect(try store.meetings(of: id).map(\.how) == [.code, .qr])
        // The pushed card is the one met at t0 - 8 signed again (same fields, level and key): not
        // kept a second time (trial 7, F18); the contact holds it as its current card.
        #expect(try store.history(of: id).map(\.cardTimestamp) == [Self.t0 - 8, Self.t0 - 100])
        #expect(c.cardTimestamp == Self.t0 - 5)
    }

    /// `id rotate` in a home: new keys, the statement verifies and chains, the old X25519 key is
    /// kept sealed under the same passphrase, then wiped when its time is up or asked.
    @Test func idRotateWritesTheStatementAndKeepsTheOldBoxKeyForAWhile() throws {
        let home = Home(path: Fixtures.temporaryDirectory() + "/home")
        let ids = IdentityStore(home: home)
        let passphrase = SecureBytes(copying: Array("correct horse".utf8))
        let (first, _) = try ids.create(passphrase: passphrase, force: false, now: Self.t0, limits: .interactive)
        struct Given: PassphraseSource {
            let value: SecureBytes
            func passphrase(forKeyAt path: String) -> SecureBytes? { value }
            func newPassphrase() throws(MeishiError) -> SecureBytes? { value }
        }
        let rotated = try ids.rotate(passphrases: Given(value: passphrase), now: Self.t0 + 10, limits: .interactive)
        do {
            _ = try ids.rotate(passphrases: Given(value: passphrase), now: Self.t0 + 10, limits: .interactive)
            Issue.record("two rotations in one second")
        } catch .rotatedThisSecond {} catch { Issue.record("\(error)") }
        let second = try ids.rotate(passphrases: Given(value: passphrase), now: Self.t0 + 20, limits: .interactive)
        let loaded = try ids.load(passphrases: Given(value: passphrase))
        #expect(loaded.did == second.identity.did && loaded.did != rotated.identity.did && rotated.identity.did != first.did)
        #expect(try ids.myRotations().map(\.oldDID) == [first.did, rotated.identity.did])
        #expect(try ids.myRotations().last?.newDID == loaded.did)
        let kept = try #require(try ids.previousBoxKey(passphrases: Given(value: passphrase), now: Self.t0 + 30))
        #expect(kept.did == rotated.identity.did && kept.boxKey.publicKey == rotated.identity.boxKey.publicKey)
        #expect(throws: MeishiError.self) {
            try ids.previousBoxKey(passphrases: Given(value: SecureBytes(copying: Array("wrong".utf8))), now: Self.t0 + 30)
        }
        // Nothing in the home holds the first or the second Ed25519 seed any more.
        for seed in [first.signingKey.seed, rotated.identity.signingKey.seed] {
            let text = Base64URL.encode(seed.withUnsafeBytes { Array($0) })
            let files = try FileManager.default.contentsOfDirectory(atPath: home.path)
            #expect(!files.contains { (try? String(contentsOfFile: home.path + "/" + $0, encoding: .utf8))?.contains(text) == true })
        }
        #expect(try ids.previousBoxKey(passphrases: Given(value: passphrase), now: Self.t0 + 20 + IdentityStore.previousBoxKeySeconds) == nil)
        #expect(!FileManager.default.fileExists(atPath: home.previousBoxKeyPath))
    }
}

/// The commands: `id rotate`, `card push` to a running `listen`, `contacts show`, an old card
/// added again, `--forget-old-key`.
@Suite struct KeyRotationCommandTests {
    @Test func aRotatedKeyReachesAListeningContactThroughCardPush() async throws {
        var mei = InProcess(), ken = InProcess()
        for (p, name) in [(mei, "Mei Tanaka"), (ken, "Ken Sato")] {
            #expect(await p("init").status == 0)
            #expect(await p("card", "set", "name", name).status == 0)
        }
        let oldCard = await mei("card", "export")
        let oldDID = try #require(await mei("id", "--json").out.split(separator: "\"").first { $0.hasPrefix("did:key:") }).description
        ken.stdin = Array(oldCard.out.utf8)
        mei.stdin = Array(await ken("card", "export").out.utf8)
        #expect(await ken("contacts", "add", "-").status == 0)
        #expect(await mei("contacts", "add", "-").status == 0)
        #expect(await ken("contacts", "note", "Mei", "met at the booth").status == 0)
        #expect(await ken("contacts", "tag", "Mei", "robotics").status == 0)

        mei.now = mei.now.addingTimeInterval(60)
        let rotated = await mei("id", "rotate", "--yes", "--json")
        #expect(rotated.status == 0, "\(rotated.err)")
        let newDID = try #require(rotated.out.split(separator: "\"").first { $0.hasPrefix("did:key:") && $0 != oldDID }).description
        #expect(FileManager.default.fileExists(atPath: mei.home + "/previous-box.key"))

        ken.now = mei.now
        let listener = ken
        let listening = Task { await listener("listen", "--port", "0", "--for", "120") }
        let port = try await MessageDeliveryTests.listeningPort(ken.recorder)
        #expect(!port.isEmpty)
        let pushed = await mei("card", "push", "Ken", "--peer", "127.0.0.1:\(port)", "--json", "--timeout", "120")
        #expect(pushed.status == 0 && pushed.out.contains("\"delivered\""), "\(pushed.out) \(pushed.err)")
        // Pushed again: the new key now (a card was given since the rotation), heard by the same listener.
        mei.now = mei.now.addingTimeInterval(5)
        ken.now = mei.now
        let again = await mei("card", "push", "Ken", "--peer", "127.0.0.1:\(port)", "--json", "--timeout", "120")
        #expect(again.status == 0 && again.out.contains("\"delivered\""), "\(again.out) \(again.err)")
        listening.cancel()
        let listened = await listening.value
        #expect(listened.err.contains("Mei Tanaka (#1) moved to a new key (rotated on 2027-01-15, was \(oldDID))"), "\(listened.err)")
        #expect(listened.err.contains("2 newer cards"), "\(listened.err)")

        let shown = await ken("contacts", "show", "Mei")
        #expect(shown.out.contains("did          \(newDID)") && shown.out.contains("rotated key on 2027-01-15 (was \(oldDID))"), "\(shown.out)")
        #expect(shown.out.contains("met at the booth") && shown.out.contains("your tags: robotics"), "\(shown.out)")
        let json = await ken("contacts", "show", "Mei", "--json")
        #expect(json.out.contains("\"rotations\"") && json.out.contains("\"oldDID\": \"\(oldDID)\""), "\(json.out)")

        // Mei's old card, from an old QR code or file, is superseded.
        ken.stdin = Array(oldCard.out.utf8)
        let old = await ken("contacts", "add", "-")
        #expect(old.status == 65 && old.err.contains("this card is superseded: its key \(oldDID) was replaced on 2027-01-15 by \(newDID)"),
                "\(old.err)")
        #expect(await ken("contacts", "list", "--json").out.components(separatedBy: "\"did\"").count == 2)

        #expect(await mei("id", "rotate", "--forget-old-key").err.contains("deleted the old X25519 key"))
        #expect(!FileManager.default.fileExists(atPath: mei.home + "/previous-box.key"))
        #expect(await mei("id", "rotate", "--forget-old-key").err.contains("nothing to delete"))
    }

    /// A contact who was not listening gets the rotation at the next exchange (post-card phase
    /// 3): the contact moves, with its meetings, note and trust; a stranger is just stored.
    @Test func aRotationIsHandedOverAtTheNextExchange() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        func meet(_ extra: [String] = []) throws -> (dial: CLI.Result, listened: String) {
            let (listener, port, out, _) = try ExchangeCommandTests.startListener(ken, ["--timeout", "60"])
            let dial = try mei.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes"] + extra)
            listener.waitUntilExit()
            #expect(dial.status == 0 && listener.terminationStatus == 0, "\(dial.stderr)")
            return (dial, String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        _ = try meet()
        #expect(try ken("contacts", "note", "Mei", "met at the booth").status == 0)
        let oldDID = try #require(try mei("id", "--json").json["did"] as? String)
        let rotated = try mei("id", "rotate", "--yes", "--json")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let newDID = try #require(rotated.json["newDID"] as? String)
        let (_, listened) = try meet(["--event", "Tokyo meetup"])
        #expect(listened.contains("Mei Tanaka (#1) moved to a new key (rotated on ") && listened.contains("was \(oldDID))"), "\(listened)")
        let shown = try ken("contacts", "show", "Mei", "--json").json
        #expect(shown["did"] as? String == newDID && shown["note"] as? String == "met at the booth")
        #expect((shown["rotations"] as? [[String: Any]])?.map { $0["oldDID"] as? String } == [oldDID])
        #expect((shown["meetings"] as? [[String: Any]])?.count == 2, "\(shown)")
        #expect(try ken("contacts", "list", "--json").stdout.components(separatedBy: "\"did\"").count == 2, "one contact, not two")
    }
}

