import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// The exchange protocol with both peers in memory, frames fed one byte at a time.
@Suite struct ExchangeSessionTests {
    struct Person {
        let key = Ed25519.SigningKey()
        let box = X25519.SecretKey()
        func card(_ name: String, at time: Int64 = Int64(Date().timeIntervalSince1970)) -> ProximityPayload {
            var p = ProximityPayload(disclosed: [.name: [name]], level: .public, shareId: SecureRandom.uuidV4(),
                                     signPubKey: key.publicKey.rawRepresentation, pubKey: box.publicKey.rawRepresentation, timestamp: time)
            p.payloadSignature = key.signature(for: p.signingInput).rawRepresentation
            return p
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
        let dialer = ExchangeSession(role: .dialer), listener = ExchangeSession(role: .listener)
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
        #expect(try Self.deliver([d.confirm(true)], to: l).events == [.peerConfirmed])
        #expect(try Self.deliver([l.confirm(true)], to: d).events == [.peerConfirmed])
        let meiCard = mei.card("Mei"), kenCard = ken.card("Ken")
        #expect(try Self.deliver([d.card(meiCard, signedBy: mei.key)], to: l).events == [.cardReceived(meiCard)])
        #expect(try Self.deliver([l.card(kenCard, signedBy: ken.key)], to: d).events == [.cardReceived(kenCard)])
        #expect(!d.isComplete && !l.isComplete)
        #expect(try Self.deliver([l.acknowledge()], to: d).events == [.peerAcknowledged])
        #expect(try Self.deliver([d.acknowledge()], to: l).events == [.peerAcknowledged])
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
            let alice = ExchangeSession(role: .dialer), bob = ExchangeSession(role: .listener)
            let relayToBob = ExchangeSession(role: .dialer), relayToAlice = ExchangeSession(role: .listener)
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
        let d = ExchangeSession(role: .dialer), l = ExchangeSession(role: .listener)
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

        let l = ExchangeSession(role: .listener)
        #expect(throws: ExchangeError.unsupportedVersion(2)) { try l.receive([0x01, 2] + [UInt8](repeating: 0, count: 32)) }
        #expect(throws: ExchangeError.self) { try ExchangeSession(role: .listener).receive([0x7F]) }
        #expect(throws: ExchangeError.self) { try ExchangeSession(role: .listener).receive([0x10, 1, 2, 3]) }
        #expect(throws: ExchangeError.self) { try ExchangeSession(role: .dialer).receive([0x01, 1] + [UInt8](repeating: 0, count: 32)) }

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
        let binding = ExchangeSession.bindingInput(transcriptHash: d1.transcriptHash!, payload: captured)
        let oldSignature = mei.key.signature(for: binding).rawRepresentation

        // ...replayed by someone else inside a new session is refused.
        let (d2, l2) = try Self.handshake()
        _ = try Self.deliver([d2.confirm(true)], to: l2)
        _ = try Self.deliver([l2.confirm(true)], to: d2)
        let replay = sealedCard(d2, oldSignature + captured.canonicalJSON)
        #expect(throws: ExchangeError.bindingInvalid) { try l2.receive(replay) }

        // A payload whose DID does not match its key, and a stale one, go through the verifier.
        let (d3, l3) = try Self.handshake()
        l3.verifyPayload = { (raw: [UInt8]) throws(PayloadError) -> ProximityPayload in
            let p = try ProximityPayload.parse(raw)
            guard DIDKey.ed25519PublicKey(from: p.senderDID) == p.signPubKey else { throw .keyMismatch }
            guard abs(Int64(Date().timeIntervalSince1970) - p.timestamp) <= 600 else { throw .malformed("stale") }
            return p
        }
        _ = try Self.deliver([d3.confirm(true)], to: l3)
        _ = try Self.deliver([l3.confirm(true)], to: d3)
        var mismatched = mei.card("Mei")
        mismatched.senderDID = DIDKey.did(forEd25519: Person().key.publicKey.rawRepresentation)
        mismatched.payloadSignature = mei.key.signature(for: mismatched.signingInput).rawRepresentation
        #expect(throws: ExchangeError.invalidCard(.keyMismatch)) { try l3.receive(d3.card(mismatched, signedBy: mei.key)) }
    }

    @Test func staleCardIsRefused() throws {
        let mei = Person()
        let (d, l) = try Self.handshake()
        l.verifyPayload = { (raw: [UInt8]) throws(PayloadError) -> ProximityPayload in
            let p = try ProximityPayload.parse(raw)
            guard abs(Int64(Date().timeIntervalSince1970) - p.timestamp) <= 600 else { throw .malformed("stale") }
            return p
        }
        _ = try Self.deliver([d.confirm(true)], to: l)
        _ = try Self.deliver([l.confirm(true)], to: d)
        let stale = mei.card("Mei", at: Int64(Date().timeIntervalSince1970) - 3600)
        #expect(throws: ExchangeError.invalidCard(.malformed("stale"))) { try l.receive(d.card(stale, signedBy: mei.key)) }
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
        session.sealForTesting(0x30, content)
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
        let a = Announcement(sessionID: SecureRandom.bytes(16), port: 47823, tag: (SecureRandom.bytes(16), SecureRandom.bytes(32)), alias: "Mei")
        #expect(Announcement(a.encoded) == a)
        let nonce = SecureRandom.bytes(16)
        let tagged = Announcement(sessionID: SecureRandom.bytes(16), port: 1, tag: (nonce, Announcement.tag(code: "tulip", nonce: nonce)))
        #expect(tagged.matches(code: "tulip") && !tagged.matches(code: "rose"))
        var bytes = a.encoded
        #expect(Announcement(bytes + [0]) == nil)           // trailing byte
        #expect(Announcement(Array(bytes.dropLast())) == nil) // truncated
        bytes[4] = 2
        #expect(Announcement(bytes) == nil)                 // other version
        #expect(Announcement([UInt8](repeating: 0, count: 200)) == nil)
        let zeroPort = Announcement(sessionID: SecureRandom.bytes(16), port: 0).encoded
        #expect(Announcement(zeroPort) == nil)
    }
}
