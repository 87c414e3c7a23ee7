import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiProximity

/// The message vectors of docs/PROTOCOL.md §9 (fixtures/messages/vectors.json), from fixed keys:
/// pair key, probe tags and answer, the envelope, and a whole delivery's frames. Another
/// implementation can check itself against the file; this test recomputes every value
/// (MEISHI_WRITE_VECTORS=1 rewrites the file after a deliberate format change).
@Suite struct MessageVectorTests {
    static func key(_ byte: UInt8) -> X25519.SecretKey {
        try! X25519.SecretKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: byte, count: 32)))
    }
    static func did(_ byte: UInt8) -> String {
        DIDKey.did(for: try! Ed25519.SigningKey(seed: SecureBytes(copying: [UInt8](repeating: byte, count: 32))).publicKey)
    }
    static func hex(_ b: [UInt8]) -> String { Hex.encode(b) }

    /// Every value, computed from the fixed inputs.
    static func compute() throws -> [String: Any] {
        let mei = key(0x11), ken = key(0x22)
        let meiDID = did(0x01), kenDID = did(0x02)
        let unixTime: Int64 = 1_800_000_000
        let window = PairKeys.window(at: unixTime)
        let sending = try PairKeys(mine: mei, theirs: ken.publicKey, sending: true)
        let receiving = try PairKeys(mine: ken, theirs: mei.publicKey, sending: false)
        precondition(sending.key == receiving.key)
        let tag = sending.tag(window: window)
        let nonce = [UInt8](repeating: 0xA5, count: 16)
        let probe = MessageProbe(tag: tag, nonce: nonce)
        let answer = MessageProbeAnswer(nonce: nonce, port: 47_825, mac: receiving.answerMAC(tag: tag, nonce: nonce, port: 47_825))
        let text = "great talk — slides at https://example.org/s"
        let id = Array(0..<16).map(UInt8.init)
        let envelope = try MessageEnvelope.seal(text: text, created: unixTime, lifetime: 86_400, once: false, senderDID: meiDID,
                                                recipientDID: kenDID, senderKey: mei, recipientKey: ken.publicKey, id: id,
                                                nonce: [UInt8](repeating: 0x42, count: 24))
        let idHash = BLAKE2b.hash(Array("meishi-message-id-v1".utf8) + id, length: 32).exposedBytes()
        // A delivery: hello, reply, the sealed envelope, the sealed acknowledgement.
        let initiator = NoiseKK(role: .initiator, prologue: MessageFrame.prologue(tag: tag), staticKey: mei, remoteStatic: ken.publicKey,
                                ephemeral: key(0x33))
        let responder = NoiseKK(role: .responder, prologue: MessageFrame.prologue(tag: tag), staticKey: ken, remoteStatic: mei.publicKey,
                                ephemeral: key(0x44))
        let time = (0..<8).map { UInt8(truncatingIfNeeded: UInt64(unixTime) >> (56 - 8 * UInt64($0))) }
        let hello = [MessageFrame.hello] + tag + (try initiator.writeMessage(time))
        let heard = try responder.readMessage(Array(hello.dropFirst(17)))
        precondition(heard == time)
        let reply = [MessageFrame.reply] + (try responder.writeMessage([]))
        _ = try initiator.readMessage(Array(reply.dropFirst()))
        let (iSend, _) = initiator.split(), (rSend, _) = responder.split()
        let sealedEnvelope = [MessageFrame.sealed] + iSend.seal([MessageFrame.envelope] + envelope.encoded)
        let sealedAck = [MessageFrame.sealed] + rSend.seal([MessageFrame.ack] + id + [0])
        return [
            "comment": "docs/PROTOCOL.md §9. X25519 secret keys are 32 bytes of 0x11 (sender), 0x22 (recipient); the Noise handshake's ephemeral keys are 32 bytes of 0x33 for the sender (the initiator: its e is in HELLO) and 0x44 for the listener (the responder: its e is in REPLY); DIDs from Ed25519 seeds of 32 bytes 0x01 (sender) and 0x02 (recipient). Frames are shown without their 4-byte length prefix.",
            "sender_ephemeral_secret": hex(key(0x33).rawRepresentation.exposedBytes()), "sender_ephemeral_public": hex(key(0x33).publicKey.rawRepresentation),
            "recipient_ephemeral_secret": hex(key(0x44).rawRepresentation.exposedBytes()), "recipient_ephemeral_public": hex(key(0x44).publicKey.rawRepresentation),
            "sender_x25519_secret": hex(mei.rawRepresentation.exposedBytes()), "sender_x25519_public": hex(mei.publicKey.rawRepresentation),
            "recipient_x25519_secret": hex(ken.rawRepresentation.exposedBytes()), "recipient_x25519_public": hex(ken.publicKey.rawRepresentation),
            "sender_did": meiDID, "recipient_did": kenDID,
            "unix_time": unixTime, "window": window,
            "pair_key": hex(sending.key.exposedBytes()), "tag": hex(tag), "tag_next_window": hex(sending.tag(window: window + 1)),
            "probe": hex(probe.encoded), "answer": hex(answer.encoded),
            "envelope_text": text, "envelope_id": hex(id), "envelope": hex(envelope.encoded), "id_hash": hex(idHash),
            "hello": hex(hello), "reply": hex(reply), "sealed_envelope": hex(sealedEnvelope), "sealed_ack": hex(sealedAck),
            "handshake_hash": hex(initiator.handshakeHash),
        ]
    }

    /// Found by fuzzing: an `expires` near Int64.min overflowed `expires - created` and trapped
    /// the receiver. Any 8 bytes are refused as a bad lifetime instead.
    @Test func hostileTimesAreRefusedWithoutOverflow() throws {
        var bytes = Array("MSHM".utf8) + [1, 0] + [UInt8](repeating: 9, count: 16)
        bytes += [0, 0, 0, 0, 0x6A, 0xFC, 0x4B, 0x00]  // created: a 2026 time
        for expires: UInt64 in [0x8000_0000_0000_0000, 0, 0x7FFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF] {
            var e = bytes
            for k in (0..<8).reversed() { e.append(UInt8(truncatingIfNeeded: expires >> (8 * UInt64(k)))) }
            e += [UInt8](repeating: 0, count: 200)
            #expect(throws: MessageEnvelopeError.self) { try MessageEnvelope(parsing: e) }
        }
    }

    @Test func vectorsMatchTheFile() throws {
        let computed = try Self.compute()
        let path = Fixtures.url("messages/vectors.json").path
        if ProcessInfo.processInfo.environment["MEISHI_WRITE_VECTORS"] == "1" {
            let data = try JSONSerialization.data(withJSONObject: computed, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: path))
        }
        let stored = try Fixtures.json("messages/vectors.json") as! [String: Any]
        #expect(Set(stored.keys) == Set(computed.keys))
        for (k, v) in computed {
            #expect("\(stored[k] ?? "missing")" == "\(v)", "\(k) differs from fixtures/messages/vectors.json")
        }
    }

    /// The stored envelope opens with the recipient's key, and any changed byte breaks it.
    @Test func storedEnvelopeOpensAndEveryByteIsBound() throws {
        let v = try Fixtures.json("messages/vectors.json") as! [String: Any]
        let bytes = Hex.decode(v["envelope"] as! String)!
        let envelope = try MessageEnvelope(parsing: bytes)
        #expect(try envelope.open(from: Self.key(0x11).publicKey, with: Self.key(0x22)) == v["envelope_text"] as! String)
        for i in stride(from: 5, to: bytes.count, by: 3) {
            var tampered = bytes
            tampered[i] ^= 0x01
            guard let t = try? MessageEnvelope(parsing: tampered) else { continue }
            #expect(throws: MessageEnvelopeError.self, "byte \(i)") { try t.open(from: Self.key(0x11).publicKey, with: Self.key(0x22)) }
        }
    }
}
