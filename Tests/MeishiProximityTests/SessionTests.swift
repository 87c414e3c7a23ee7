import Foundation
import Testing
@testable import MeishiCard
import MeishiCrypto
import NIOCore
@testable import MeishiProximity

/// The exchange protocol with both peers in memory, frames fed one byte at a time.
@Suite struct ExchangeSessionTests {
    struct Person {
        let key = Ed25519.SigningKey()
        let box = X25519.SecretKey()
        func card(_ name: String, at time: Int64 = Int64(Date().timeIntervalSince1970)) -> SignedCard {
            try! ProximityPayload.sign(disclosed: [.name: [name]], level: .public, signingKey: key, boxKey: box.publicKey, timestamp: time)
        }
    }

    /// The verifier an exchange uses: everything `meishi verify` checks, within 10 minutes either way.
    static let verifier = CardVerifier(maximumSkew: 600, maximumAge: 600, clock: { Int64(Date().timeIntervalSince1970) })

    static func session(_ role: ExchangeSession.Role) -> ExchangeSession { ExchangeSession(role: role, verifier: verifier) }

    /// Events as comparable names; a received card as the name it carries.
    static func names(_ events: [ExchangeSession.Event]) -> [String] {
        events.map { e in
            switch e {
            case .codeReady(let c): "code \(c)"
            case .codeConfirmed: "confirmed by code"
            case .peerConfirmed: "confirmed"
            case .cardReceived(let card): "card \(card.payload.displayName ?? "")"
            case .peerAcknowledged: "acknowledged"
            case .postCard(let type, let content): "post-card \(type) (\(content.count) bytes)"
            }
        }
    }

    /// Delivers `bodies` through the wire format, byte by byte, and returns what `to` answers.
    static func deliver(_ bodies: [[UInt8]], to session: ExchangeSession) throws -> (send: [[UInt8]], events: [ExchangeSession.Event]) {
        var decoder = FrameDecoder()
        var send: [[UInt8]] = [], events: [ExchangeSession.Event] = []
        for byte in bodies.flatMap(FrameCodec.encode) {
            for frame in try decoder.feed([byte]) {
                let step = try session.receive(frame)
                send += step.send
                if let e = step.event { events.append(e) }
            }
        }
        #expect(decoder.pendingByteCount == 0)
        return (send, events)
    }

    /// Runs the handshake; returns both sessions with their codes ready.
    static func handshake() throws -> (ExchangeSession, ExchangeSession) {
        let dialer = Self.session(.dialer), listener = Self.session(.listener)
        let r1 = try deliver([dialer.start()!], to: listener)
        let r2 = try deliver(r1.send, to: dialer)
        #expect(r2.events.count == 1)
        let r3 = try deliver(r2.send, to: listener)
        #expect(r3.events.count == 1 && r3.send.isEmpty)
        return (dialer, listener)
    }

    @Test func fullExchange() throws {
        let (d, l) = try Self.handshake()
        #expect(d.code != nil && d.code == l.code)
        #expect(d.code!.count == 7 && d.code!.dropFirst(3).first == " ")
        #expect(d.transcriptHash == l.transcriptHash)
        let mei = Person(), ken = Person()
        #expect(Self.names(try Self.deliver([d.confirm(true)], to: l).events) == ["confirmed"])
        #expect(Self.names(try Self.deliver([l.confirm(true)], to: d).events) == ["confirmed"])
        let meiCard = mei.card("Mei"), kenCard = ken.card("Ken")
        #expect(Self.names(try Self.deliver([d.card(meiCard, signedBy: mei.key)], to: l).events) == ["card Mei"])
        #expect(Self.names(try Self.deliver([l.card(kenCard, signedBy: ken.key)], to: d).events) == ["card Ken"])
        // Each side keeps the peer's card exactly as it arrived, verified.
        #expect(l.peerCard?.bytes == meiCard.bytes && l.peerCard?.payload == meiCard.payload)
        #expect(d.peerCard?.bytes == kenCard.bytes)
        #expect(!d.isComplete && !l.isComplete)
        #expect(Self.names(try Self.deliver([l.acknowledge()], to: d).events) == ["acknowledged"])
        #expect(Self.names(try Self.deliver([d.acknowledge()], to: l).events) == ["acknowledged"])
        #expect(d.isComplete && l.isComplete)
    }

    @Test func declineEndsTheSessionOnBothSides() throws {
        let (d, l) = try Self.handshake()
        let decline = l.confirm(false)
        #expect(throws: ExchangeError.declinedByPeer) { try Self.deliver([decline], to: d) }
        #expect(!l.confirmedLocally && !d.isComplete)
    }

    /// A relay that substitutes its own keys (it must commit to its key towards the listener
    /// before it sees the listener's) ends up with different codes on the two screens.
    @Test func relayInTheMiddleShowsDifferentCodes() throws {
        var differing = 0
        for _ in 0..<20 {
            let alice = Self.session(.dialer), bob = Self.session(.listener)
            let relayToBob = Self.session(.dialer), relayToAlice = Self.session(.listener)
            let hello = alice.start()!
            let relayHello = relayToBob.start()!
            let bobResponse = try Self.deliver([relayHello], to: bob).send
            let relayResponse = try Self.deliver([hello], to: relayToAlice).send
            let aliceReveal = try Self.deliver(relayResponse, to: alice).send
            _ = try Self.deliver(aliceReveal, to: relayToAlice)
            let relayReveal = try Self.deliver(bobResponse, to: relayToBob).send
            _ = try Self.deliver(relayReveal, to: bob)
            #expect(alice.code == relayToAlice.code && bob.code == relayToBob.code)
            if alice.code != bob.code { differing += 1 }
            // A person who sees different codes declines: the other side stops, nothing stored.
            #expect(throws: ExchangeError.declinedByPeer) { try Self.deliver([bob.confirm(false)], to: relayToBob) }
        }
        #expect(differing == 20)
    }

    @Test func revealThatDoesNotMatchTheCommitment() throws {
        let d = Self.session(.dialer), l = Self.session(.listener)
        _ = try Self.deliver([d.start()!], to: l)
        let other = X25519.SecretKey()
        let forged = [UInt8(0x03)] + other.publicKey.rawRepresentation + SecureRandom.bytes(32)
        #expect(throws: ExchangeError.commitmentMismatch) { try Self.deliver([forged], to: l) }
    }

    @Test func hostileFrames() throws {
        var decoder = FrameDecoder()
        #expect(throws: ExchangeError.frameTooLarge(65_537)) { try decoder.feed([0x00, 0x01, 0x00, 0x01]) }
        var d2 = FrameDecoder()
        #expect(throws: ExchangeError.self) { try d2.feed([0, 0, 0, 0]) }
        var d3 = FrameDecoder()
        #expect(try d3.feed([0, 0, 0, 10, 1, 2]).isEmpty)  // truncated: waits, never crashes
        #expect(d3.pendingByteCount == 6)

        let l = Self.session(.listener)
        #expect(throws: ExchangeError.unsupportedVersion(2)) { try l.receive([0x01, 2] + [UInt8](repeating: 0, count: 32)) }
        #expect(throws: ExchangeError.self) { try Self.session(.listener).receive([0x7F]) }
        #expect(throws: ExchangeError.self) { try Self.session(.listener).receive([0x10, 1, 2, 3]) }
        #expect(throws: ExchangeError.self) { try Self.session(.dialer).receive([0x01, 1] + [UInt8](repeating: 0, count: 32)) }

        let (d, l2) = try Self.handshake()
        var sealed = d.confirm(true)
        sealed[sealed.count - 1] ^= 1
        #expect(throws: ExchangeError.badAuthentication) { try l2.receive(sealed) }
    }

    @Test func replayedCardAndStaleOrMismatchedCards() throws {
        let mei = Person()
        // A card and binding captured in one session...
        let (d1, l1) = try Self.handshake()
        _ = try Self.deliver([d1.confirm(true)], to: l1)
        _ = try Self.deliver([l1.confirm(true)], to: d1)
        let captured = mei.card("Mei")
        let binding = ExchangeSession.bindingInput(transcriptHash: d1.transcriptHash!, cardBytes: captured.bytes)
        let oldSignature = mei.key.signature(for: binding).rawRepresentation

        // ...replayed by someone else inside a new session is refused.
        let (d2, l2) = try Self.handshake()
        _ = try Self.deliver([d2.confirm(true)], to: l2)
        _ = try Self.deliver([l2.confirm(true)], to: d2)
        let replay = sealedCard(d2, oldSignature + captured.bytes)
        #expect(throws: ExchangeError.bindingInvalid) { try l2.receive(replay) }

        // A payload whose DID does not match its key goes through the session's own verifier.
        let (d3, l3) = try Self.handshake()
        _ = try Self.deliver([d3.confirm(true)], to: l3)
        _ = try Self.deliver([l3.confirm(true)], to: d3)
        var mismatched = mei.card("Mei").payload
        mismatched.senderDID = DIDKey.did(for: Person().key.publicKey)
        let forged = mismatched.signed(with: mei.key)
        #expect(throws: ExchangeError.invalidCard(.keyMismatch)) { try l3.receive(d3.card(forged, signedBy: mei.key)) }
        #expect(l3.peerCard == nil)
    }

    /// There is no way around the verifier: a card with a bad signature, a forged binding over a
    /// valid card, or the QR text form inside a CARD are all refused by the session itself.
    @Test func unverifiedCardsNeverPass() throws {
        let mei = Person()
        var tampered = mei.card("Mei").payload
        tampered.cardFields[.name] = .single("Mallory")
        let (d, l) = try Self.handshake()
        _ = try Self.deliver([d.confirm(true)], to: l)
        _ = try Self.deliver([l.confirm(true)], to: d)
        let badSignature = tampered.canonicalJSON
        let binding = mei.key.signature(for: ExchangeSession.bindingInput(transcriptHash: d.transcriptHash!, cardBytes: badSignature))
        #expect(throws: ExchangeError.invalidCard(.badSignature)) { try l.receive(sealedCard(d, binding.rawRepresentation + badSignature)) }

        let (d2, l2) = try Self.handshake()
        _ = try Self.deliver([d2.confirm(true)], to: l2)
        _ = try Self.deliver([l2.confirm(true)], to: d2)
        let text = Array(CardQRText.encode(mei.card("Mei").payload).utf8)
        let textBinding = mei.key.signature(for: ExchangeSession.bindingInput(transcriptHash: d2.transcriptHash!, cardBytes: text))
        #expect(throws: ExchangeError.self) { try l2.receive(sealedCard(d2, textBinding.rawRepresentation + text)) }
        #expect(l.peerCard == nil && l2.peerCard == nil)
    }

    @Test func staleCardIsRefused() throws {
        let mei = Person()
        let (d, l) = try Self.handshake()
        _ = try Self.deliver([d.confirm(true)], to: l)
        _ = try Self.deliver([l.confirm(true)], to: d)
        let stale = mei.card("Mei", at: Int64(Date().timeIntervalSince1970) - 3600)
        #expect {
            try l.receive(d.card(stale, signedBy: mei.key))
        } throws: { error in
            guard case ExchangeError.invalidCard(.tooOld(let s)) = error else { return false }
            return s >= 3600
        }
    }

    @Test func cardBeforeConfirmationIsAViolation() throws {
        let (d, l) = try Self.handshake()
        _ = try Self.deliver([l.confirm(true)], to: d)
        _ = d.confirm(true)  // d confirmed, but its CONFIRM never reaches l
        let mei = Person()
        #expect(throws: ExchangeError.self) { try l.receive(d.card(mei.card("Mei"), signedBy: mei.key)) }
    }

    /// Builds a sealed CARD with arbitrary content, as a hostile peer would.
    func sealedCard(_ session: ExchangeSession, _ content: [UInt8]) -> [UInt8] {
        session.seal(.card, content)
    }
}

@Suite struct PeerGuardTests {
    @Test func fiveFailuresInTenMinutesBanForTheRestOfTheWindow() {
        let g = PeerGuard()
        for t in 0..<4 { g.recordFailure("10.0.0.9", now: Double(t)) }
        #expect(!g.isBanned("10.0.0.9", now: 10))
        g.recordFailure("10.0.0.9", now: 11)
        #expect(g.isBanned("10.0.0.9", now: 12))
        #expect(!g.isBanned("10.0.0.8", now: 12))
        #expect(g.isBanned("10.0.0.9", now: 599))
        #expect(!g.isBanned("10.0.0.9", now: 612))  // the oldest failures left the window
    }

    @Test func announcementsRoundTripAndRefuseGarbage() {
        let a = Announcement(sessionID: SecureRandom.bytes(16), port: 47823, nameplate: 7, alias: "Mei")
        #expect(Announcement(a.encoded) == a)
        // Only N of the code is announced: nothing derived from its words.
        #expect(a.encoded.count == 4 + 1 + 16 + 2 + 1 + 2 + 1 + 3)
        #expect(a.matches(code: try! ExchangeCode(parsing: "7-tulip-anchor")) && !a.matches(code: try! ExchangeCode(parsing: "8-tulip-anchor")))
        var outOfRange = Announcement(sessionID: SecureRandom.bytes(16), port: 1, nameplate: 1000).encoded
        #expect(Announcement(outOfRange) == nil)
        outOfRange[24] = 0; outOfRange[25] = 0
        #expect(Announcement(outOfRange) == nil)
        var bytes = a.encoded
        #expect(Announcement(bytes + [0]) == nil)           // trailing byte
        #expect(Announcement(Array(bytes.dropLast())) == nil) // truncated
        bytes[4] = 2
        #expect(Announcement(bytes) == nil)                 // other version
        #expect(Announcement([UInt8](repeating: 0, count: 200)) == nil)
        let zeroPort = Announcement(sessionID: SecureRandom.bytes(16), port: 0).encoded
        #expect(Announcement(zeroPort) == nil)
        let query = Announcement(sessionID: SecureRandom.bytes(16), port: 9, wantsAnswer: true).encoded
        #expect(Announcement(query)?.wantsAnswer == true && Announcement(query) == Announcement(sessionID: Array(query[5..<21]), port: 9))
        var unknownFlag = query
        unknownFlag[23] |= 8
        #expect(Announcement(unknownFlag) == nil)
    }
}

/// Discovery keeps the first address heard for a session id: a replay cannot move a peer.
@Suite struct DiscoveryPinningTests {
    static func address(_ ip: String) -> SocketAddress { try! SocketAddress(ipAddress: ip, port: 47824) }

    @Test func firstAddressPerFamilyIsPinned() {
        let a = Announcement(sessionID: SecureRandom.bytes(16), port: 47823)
        var table: [String: DiscoveredPeer] = [:]
        Discovery.record(a, from: Self.address("10.0.0.2"), now: 1, in: &table)
        Discovery.record(a, from: Self.address("10.0.0.66"), now: 2, in: &table)
        #expect(table.count == 1 && table.values.first?.host == "10.0.0.2")
        // Only the pinned address keeps it alive: the replayer's datagrams do not.
        #expect(table.values.first?.lastSeen == 1)
        Discovery.record(a, from: Self.address("fe80::2"), now: 3, in: &table)
        #expect(table.values.first?.addresses.count == 2 && table.values.first?.host == "10.0.0.2")
        // Same session id with other content (another port): not the peer pinned, ignored.
        var other = a
        other.port = 4444
        Discovery.record(other, from: Self.address("10.0.0.2"), now: 4, in: &table)
        #expect(table.values.first?.announcement.port == 47823)
    }

    @Test func thePeerTableIsBounded() {
        var table: [String: DiscoveredPeer] = [:]
        for n in 0..<500 {
            Discovery.record(Announcement(sessionID: SecureRandom.bytes(16), port: 1),
                             from: Self.address("10.0.\(n / 250).\(n % 250 + 1)"), now: 1, in: &table)
        }
        #expect(table.count == Discovery.maximumPeers)
    }
}

/// The exchange with a code: CPace authenticates, nothing is compared, a wrong code fails closed.
@Suite struct CodeSessionTests {
    typealias S = ExchangeSessionTests

    static func pair(_ dialerCode: String, _ listenerCode: String, ids: ([UInt8], [UInt8])? = nil) throws -> (ExchangeSession, ExchangeSession) {
        let d = ExchangeSession(role: .dialer, verifier: S.verifier, binding: .init(code: try ExchangeCode(parsing: dialerCode)))
        let l = ExchangeSession(role: .listener, verifier: S.verifier, binding: .init(code: try ExchangeCode(parsing: listenerCode)))
        if let ids {
            d.bindDiscovery(dialerID: ids.0, listenerID: ids.1)
            l.bindDiscovery(dialerID: ids.0, listenerID: ids.1)
        }
        return (d, l)
    }

    @Test func sameCodeAuthenticatesWithoutComparingDigits() throws {
        let (d, l) = try Self.pair("7-tulip-anchor", "7-Tulip-Anchor", ids: (SecureRandom.bytes(16), SecureRandom.bytes(16)))
        let r1 = try S.deliver([d.start()!], to: l)
        // The listener's REPLY (Yb) lets the dialer test no code: a run abandoned here spends no guess.
        #expect(!l.codeRevealed && !d.codeRevealed)
        let r2 = try S.deliver(r1.send, to: d)
        #expect(d.codeRevealed && !l.codeRevealed && r2.events.isEmpty)
        let r3 = try S.deliver(r2.send, to: l)
        #expect(l.codeRevealed && S.names(r3.events) == ["confirmed by code"])
        let r4 = try S.deliver(r3.send, to: d)
        #expect(S.names(r4.events) == ["confirmed by code"] && r4.send.isEmpty)
        #expect(d.code == nil && l.code == nil && d.codeConfirmedByPAKE && l.codeConfirmedByPAKE)
        #expect(d.transcriptHash == l.transcriptHash && d.confirmedByPeer && l.confirmedByPeer)
        // Cards go straight after: no CONFIRM frames with a code.
        let mei = S.Person(), ken = S.Person()
        #expect(S.names(try S.deliver([d.card(mei.card("Mei"), signedBy: mei.key)], to: l).events) == ["card Mei"])
        #expect(S.names(try S.deliver([l.card(ken.card("Ken"), signedBy: ken.key)], to: d).events) == ["card Ken"])
        _ = try S.deliver([l.acknowledge()], to: d)
        _ = try S.deliver([d.acknowledge()], to: l)
        #expect(d.isComplete && l.isComplete)
    }

    /// A wrong code: the listener refuses the dialer's confirmation and answers only MISMATCH, with
    /// nothing derived from the key; the dialer learns "the codes do not match". Both spent a guess.
    @Test func wrongCodeFailsClosedOnBothSides() throws {
        let (d, l) = try Self.pair("7-tulip-anchor", "7-tulip-ankle")
        let r1 = try S.deliver([d.start()!], to: l)
        let r2 = try S.deliver(r1.send, to: d)
        #expect(throws: ExchangeError.codesDoNotMatch) { try S.deliver(r2.send, to: l) }
        #expect(l.reject("x") == nil, "the listener has no key to seal anything with")
        #expect(throws: ExchangeError.codesDoNotMatch) { try S.deliver([ExchangeSession.mismatchFrame], to: d) }
        #expect(d.codeRevealed && l.codeRevealed && !d.codeConfirmedByPAKE && !l.codeConfirmedByPAKE)
    }

    /// The same code but other discovery session ids (a relay between two discovered peers, or a
    /// replayed introduction) gives other generators: the run fails.
    @Test func codeIsBoundToTheDiscoveredSessions() throws {
        let (d, l) = try Self.pair("7-tulip-anchor", "7-tulip-anchor", ids: (SecureRandom.bytes(16), SecureRandom.bytes(16)))
        l.bindDiscovery(dialerID: SecureRandom.bytes(16), listenerID: SecureRandom.bytes(16))
        let r2 = try S.deliver(try S.deliver([d.start()!], to: l).send, to: d)
        #expect(throws: ExchangeError.codesDoNotMatch) { try S.deliver(r2.send, to: l) }
    }

    @Test func bothSidesMustUseACode() throws {
        let withCode = ExchangeSession(role: .listener, verifier: S.verifier, binding: .init(code: try ExchangeCode(parsing: "7-anchor")))
        #expect(throws: ExchangeError.codeExpected) { try withCode.receive(S.session(.dialer).start()!) }
        let dialerWithCode = ExchangeSession(role: .dialer, verifier: S.verifier, binding: .init(code: try ExchangeCode(parsing: "7-anchor")))
        #expect(throws: ExchangeError.codeNotExpected) { try S.session(.listener).receive(dialerWithCode.start()!) }
    }

    /// A relay that knows no code, between two people with the same code: whatever it forwards
    /// or substitutes, neither side confirms.
    @Test func relayWithoutTheCodeConfirmsNothing() throws {
        let (alice, bob) = try Self.pair("9-secret-words", "9-secret-words")
        let (relayToBob, relayToAlice) = try Self.pair("9-guess-one", "9-guess-one")
        let aliceHello = alice.start()!
        _ = try S.deliver([aliceHello], to: relayToAlice)
        let bobReply = try S.deliver([relayToBob.start()!], to: bob).send
        let relayFinish = try S.deliver(bobReply, to: relayToBob).send
        #expect(throws: ExchangeError.codesDoNotMatch) { try S.deliver(relayFinish, to: bob) }
        // Forwarding Bob's own reply to Alice unchanged fails too: the nonces differ.
        let aliceFinish = try S.deliver(bobReply, to: alice).send
        #expect(throws: ExchangeError.self) { try S.deliver(aliceFinish, to: relayToAlice) }
        #expect(!alice.codeConfirmedByPAKE && !bob.codeConfirmedByPAKE)
    }

    @Test func hostilePAKEFrames() throws {
        let l = ExchangeSession(role: .listener, verifier: S.verifier, binding: .init(code: try ExchangeCode(parsing: "7-anchor")))
        #expect(throws: ExchangeError.self) { try l.receive([0x04, 1]) }
        #expect(throws: ExchangeError.unsupportedVersion(2)) { try l.receive([0x04, 2] + [UInt8](repeating: 0, count: 16)) }
        let (d, l2) = try Self.pair("7-anchor", "7-anchor")
        var reply = try S.deliver([d.start()!], to: l2).send[0]
        reply[reply.count - 2] ^= 0xFF  // damage the share
        #expect(throws: ExchangeError.self) { try d.receive(reply) }
        let (d3, l3) = try Self.pair("7-anchor", "7-anchor")
        let finish = try S.deliver(try S.deliver([d3.start()!], to: l3).send, to: d3).send[0]
        #expect(throws: ExchangeError.self) { try l3.receive(Array(finish.dropLast())) }
        #expect(throws: ExchangeError.self) { try l3.receive([0x06] + [UInt8](repeating: 0, count: 100)) }
    }
}

/// The session builds CPace's inputs exactly as docs/PROTOCOL.md §5.6 and fixtures/cpace-meishi.json say.
@Suite struct CodeBindingVectorTests {
    @Test func channelIDOfTheVector() throws {
        let v = try Fixtures.json("cpace-meishi.json") as! [String: String]
        let binding = ExchangeSession.CodeBinding(code: try ExchangeCode(parsing: v["code"]!))
        #expect(Hex.encode(binding.channelID) == v["CI"]!)
        #expect(Hex.encode(Array(binding.code.password.utf8)) == v["PRS"]!)
        var discovered = binding
        discovered.dialerID = [1, 2]
        discovered.listenerID = [3]
        #expect(Hex.encode(discovered.channelID) == v["CI"]! + "02010201" + "03")
    }
}
