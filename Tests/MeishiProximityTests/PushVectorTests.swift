import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// The `card push` vectors of docs/PROTOCOL.md §9.7 (fixtures/messages/push-vectors.json), made
/// by tools/push-vectors.py without meishi: the card verifies, and meishi's Noise KK and frame
/// constants give the same sealed CARD, CARD-ACK and REFUSE frames from the same keys.
@Suite struct PushVectorTests {
    static let path = "messages/push-vectors.json"

    @Test func meishiComputesTheScriptsFrames() throws {
        let v = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: Fixtures.url(Self.path))) as? [String: Any])
        func bytes(_ name: String) throws -> [UInt8] {
            let text = try #require(v[name] as? String)
            return try #require(Hex.decode(text))
        }
        let unixTime = try #require(v["unix_time"] as? Int64)
        let cardText = try #require(v["card"] as? String)
        let cardBytes = Array(cardText.utf8)
        let card = try CardVerifier(clock: { unixTime }).verify(cardBytes)
        #expect(card.payload.senderDID == MessageVectorTests.did(0x01))
        #expect(card.payload.timestamp == (v["card_timestamp"] as? Int64))
        #expect(card.payload.pubKey.rawRepresentation == MessageVectorTests.key(0x11).publicKey.rawRepresentation)

        let mei = MessageVectorTests.key(0x11), ken = MessageVectorTests.key(0x22)
        let tag = try bytes("tag")
        func delivery(_ inner: [UInt8], _ answer: [UInt8]) throws -> (hello: [UInt8], sealed: [UInt8], answer: [UInt8], opened: [UInt8]) {
            let initiator = NoiseKK(role: .initiator, prologue: MessageFrame.prologue(tag: tag), staticKey: mei, remoteStatic: ken.publicKey,
                                    ephemeral: MessageVectorTests.key(0x33))
            let responder = NoiseKK(role: .responder, prologue: MessageFrame.prologue(tag: tag), staticKey: ken, remoteStatic: mei.publicKey,
                                    ephemeral: MessageVectorTests.key(0x44))
            let hello = [MessageFrame.hello] + tag + (try initiator.writeMessage(bigEndian(unixTime)))
            _ = try responder.readMessage(Array(hello.dropFirst(17)))
            _ = try initiator.readMessage(Array(try responder.writeMessage([])))
            let (iSend, _) = initiator.split(), (rSend, rReceive) = responder.split()
            let sealed = [MessageFrame.sealed] + iSend.seal(inner)
            return (hello, sealed, [MessageFrame.sealed] + rSend.seal(answer), try rReceive.open(Array(sealed.dropFirst())))
        }
        let stored = try delivery([MessageFrame.card] + cardBytes, [MessageFrame.cardAck] + bigEndian(card.payload.timestamp))
        #expect(stored.hello == (try bytes("hello")))
        #expect(stored.sealed == (try bytes("sealed_card")))
        #expect(stored.answer == (try bytes("sealed_card_ack")))
        #expect(stored.opened == [MessageFrame.card] + cardBytes)
        let refused = try delivery([MessageFrame.card] + cardBytes, [MessageFrame.refusal, MessageRefusal.notNewer.rawValue])
        #expect(refused.answer == (try bytes("sealed_refusal_not_newer")))
    }

    @Test(.enabled(if: ExchangeVectorTests.python(importing: "rfc8785") != nil, "skipped: needs python3 with `cryptography` and `rfc8785` (make test installs them in .venv)"))
    func theScriptPrintsTheFile() throws {
        try ExchangeVectorTests.expectScript("tools/push-vectors.py", prints: Self.path, importing: "rfc8785")
    }
}
