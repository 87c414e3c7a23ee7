import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// The key rotation vectors of docs/PROTOCOL.md §10 (fixtures/messages/rotation-vectors.json),
/// made by tools/rotation-vectors.py without meishi: meishi signs the same statement bytes from
/// the same seeds, verifies the chain, gives each refused statement the script's verdict, and
/// seals the same ROTATION frame under the old key.
@Suite struct RotationVectorTests {
    static let path = "messages/rotation-vectors.json"

    static func seed(_ byte: UInt8) -> Ed25519.SigningKey {
        try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
    }

    @Test func meishiComputesTheScriptsStatementsAndFrame() throws {
        let v = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Fixtures.url(Self.path))) as? [String: Any])
        func text(_ name: String) throws -> String { try #require(v[name] as? String) }
        func bytes(_ name: String) throws -> [UInt8] { try #require(Hex.decode(try text(name))) }
        let time = try #require(v["time"] as? Int64), unixTime = try #require(v["unix_time"] as? Int64)
        let mine = RotationStatement.sign(old: Self.seed(0x01), new: Self.seed(0x02), time: time)
        let oldDID = try text("old_did"), newDID = try text("new_did")
        #expect(mine.oldDID == oldDID && mine.newDID == newDID)
        #expect(RotationStatement.signingInput(oldDID: mine.oldDID, newDID: mine.newDID, time: time) == (try bytes("signing_input")))
        #expect(mine.bytes == Array(try text("statement").utf8))
        let next = RotationStatement.sign(old: Self.seed(0x02), new: Self.seed(0x03), time: time + 60)
        #expect(try RotationStatement.verifyChain(Array(try text("chain").utf8)) == [mine, next])

        let refused = try #require(v["refused"] as? [[String: String]])
        #expect(refused.count == 5)
        for r in refused {
            let verdict: String
            let bytes = Array(try #require(r["statement"]).utf8)
            do {
                _ = try RotationStatement.verifyChain(bytes)
                verdict = "valid"
            } catch .badOldSignature { verdict = "bad-old-signature" } catch .badNewSignature { verdict = "bad-new-signature" }
            catch .sameKey { verdict = "same-key" } catch .malformed(let why) { verdict = why.contains("chain") ? "not-a-chain" : "malformed" }
            #expect(verdict == r["verdict"], "\(r["about"] ?? "")")
        }

        // The card of the new key, in a ROTATION frame sealed under the old X25519 key (0x11 → 0x22).
        let cardBytes = Array(try text("card").utf8)
        let card = try CardVerifier(clock: { unixTime }).verify(cardBytes)
        #expect(card.payload.senderDID == mine.newDID && card.payload.pubKey.rawRepresentation == MessageVectorTests.key(0x55).publicKey.rawRepresentation)
        let statement = mine.bytes
        let frame = [MessageFrame.rotation, UInt8(statement.count >> 8), UInt8(statement.count & 0xFF)] + statement + cardBytes
        #expect(MessageTransport.splitRotation(Array(frame.dropFirst()))?.statements == statement)
        let mei = MessageVectorTests.key(0x11), ken = MessageVectorTests.key(0x22), tag = try bytes("tag")
        func sealed(_ inner: [UInt8], _ answer: [UInt8]) throws -> (sealed: [UInt8], answer: [UInt8]) {
            let initiator = NoiseKK(role: .initiator, prologue: MessageFrame.prologue(tag: tag), staticKey: mei, remoteStatic: ken.publicKey,
                                    ephemeral: MessageVectorTests.key(0x33))
            let responder = NoiseKK(role: .responder, prologue: MessageFrame.prologue(tag: tag), staticKey: ken, remoteStatic: mei.publicKey,
                                    ephemeral: MessageVectorTests.key(0x44))
            let hello = try initiator.writeMessage(bigEndian(unixTime))
            _ = try responder.readMessage(hello)
            _ = try initiator.readMessage(Array(try responder.writeMessage([])))
            let (iSend, _) = initiator.split(), (rSend, _) = responder.split()
            return ([MessageFrame.sealed] + iSend.seal(inner), [MessageFrame.sealed] + rSend.seal(answer))
        }
        let stored = try sealed(frame, [MessageFrame.cardAck] + bigEndian(card.payload.timestamp))
        let expected = (try bytes("sealed_rotation"), try bytes("sealed_rotation_ack"))
        #expect(stored.sealed == expected.0 && stored.answer == expected.1)
        #expect(try sealed(frame, [MessageFrame.refusal, MessageRefusal.rotationApplied.rawValue]).answer == (try bytes("sealed_refusal_applied")))
    }

    @Test(.enabled(if: ExchangeVectorTests.python(importing: "rfc8785") != nil, "skipped: needs python3 with `cryptography` and `rfc8785` (make test installs them in .venv)"))
    func theScriptPrintsTheFile() throws {
        try ExchangeVectorTests.expectScript("tools/rotation-vectors.py", prints: Self.path, importing: "rfc8785")
    }
}
