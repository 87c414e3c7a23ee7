import Foundation
import Testing
import MeishiCard
@testable import MeishiCrypto

private func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }
private func key(_ hex: String) -> X25519.SecretKey { try! X25519.SecretKey(rawRepresentation: SecureBytes(copying: bytes(hex))) }

/// Noise_KK_25519_ChaChaPoly_SHA256 against the cacophony vector (fixtures/external/noise-kk-cacophony.json).
@Suite struct NoiseKKVectorTests {
    let v: [String: Any]
    init() throws { v = try Fixtures.json("external/noise-kk-cacophony.json") as! [String: Any] }
    func h(_ name: String) -> [UInt8] { bytes(v[name] as! String) }

    @Test func handshakeAndTransportMatchTheVector() throws {
        #expect(v["protocol_name"] as? String == NoiseKK.protocolName)
        let initiatorStatic = key(v["init_static"] as! String), responderStatic = key(v["resp_static"] as! String)
        #expect(initiatorStatic.publicKey.rawRepresentation == h("resp_remote_static"))
        #expect(responderStatic.publicKey.rawRepresentation == h("init_remote_static"))
        let initiator = NoiseKK(role: .initiator, prologue: h("init_prologue"), staticKey: initiatorStatic,
                                remoteStatic: try X25519.PublicKey(rawRepresentation: h("init_remote_static")),
                                ephemeral: key(v["init_ephemeral"] as! String))
        let responder = NoiseKK(role: .responder, prologue: h("resp_prologue"), staticKey: responderStatic,
                                remoteStatic: try X25519.PublicKey(rawRepresentation: h("resp_remote_static")),
                                ephemeral: key(v["resp_ephemeral"] as! String))
        let messages = (v["messages"] as! [[String: String]]).map { (bytes($0["payload"]!), bytes($0["ciphertext"]!)) }
        #expect(messages.count == 6)
        let m1 = try initiator.writeMessage(messages[0].0)
        #expect(m1 == messages[0].1)
        #expect(try responder.readMessage(m1) == messages[0].0)
        let m2 = try responder.writeMessage(messages[1].0)
        #expect(m2 == messages[1].1)
        #expect(try initiator.readMessage(m2) == messages[1].0)
        #expect(initiator.handshakeHash == h("handshake_hash"))
        #expect(responder.handshakeHash == h("handshake_hash"))
        let (iSend, iReceive) = initiator.split(), (rSend, rReceive) = responder.split()
        for (n, (payload, ciphertext)) in messages.dropFirst(2).enumerated() {
            let (send, receive) = n % 2 == 0 ? (iSend, rReceive) : (rSend, iReceive)
            let c = send.seal(payload)
            #expect(c == ciphertext, "transport message \(n + 3)")
            #expect(try receive.open(c) == payload)
        }
    }

    @Test func aWrongStaticKeyFailsTheFirstMessage() throws {
        let a = X25519.SecretKey(), b = X25519.SecretKey(), mallory = X25519.SecretKey()
        // Mallory claims to be a, but does not hold a's secret: b expects a's static key.
        let forged = NoiseKK(role: .initiator, prologue: [], staticKey: mallory, remoteStatic: b.publicKey)
        let responder = NoiseKK(role: .responder, prologue: [], staticKey: b, remoteStatic: a.publicKey)
        #expect(throws: CryptoError.authenticationFailed) { try responder.readMessage(try forged.writeMessage([1, 2, 3])) }
        // Another prologue: the transcripts differ, the first message does not open.
        let other = NoiseKK(role: .initiator, prologue: [9], staticKey: a, remoteStatic: b.publicKey)
        let responder2 = NoiseKK(role: .responder, prologue: [], staticKey: b, remoteStatic: a.publicKey)
        #expect(throws: CryptoError.authenticationFailed) { try responder2.readMessage(try other.writeMessage([])) }
    }

    @Test func aReplayedFirstMessageLeavesTheReplayerUnableToContinue() throws {
        let a = X25519.SecretKey(), b = X25519.SecretKey()
        let first = try NoiseKK(role: .initiator, prologue: [], staticKey: a, remoteStatic: b.publicKey).writeMessage([])
        // The responder accepts the replayed message (KK cannot tell), but its reply is keyed to
        // an ephemeral secret only the original initiator held: a fresh initiator cannot read it.
        let responder = NoiseKK(role: .responder, prologue: [], staticKey: b, remoteStatic: a.publicKey)
        _ = try responder.readMessage(first)
        let reply = try responder.writeMessage([])
        let replayer = NoiseKK(role: .initiator, prologue: [], staticKey: a, remoteStatic: b.publicKey)
        _ = try replayer.writeMessage([])
        #expect(throws: CryptoError.authenticationFailed) { try replayer.readMessage(reply) }
    }

    @Test func boxOpensOnlyBetweenThePair() throws {
        let a = X25519.SecretKey(), b = X25519.SecretKey(), c = X25519.SecretKey()
        let nonce = SecureRandom.bytes(Box.nonceByteCount)
        let sealed = try Box.seal(Array("hi".utf8), nonce: nonce, to: b.publicKey, from: a)
        #expect(try Box.open(sealed, nonce: nonce, from: a.publicKey, to: b).exposedBytes() == Array("hi".utf8))
        // Deniable: b can make the very same box for itself.
        #expect(try Box.seal(Array("hi".utf8), nonce: nonce, to: a.publicKey, from: b) == sealed)
        #expect(throws: CryptoError.authenticationFailed) { try Box.open(sealed, nonce: nonce, from: c.publicKey, to: b) }
        var tampered = sealed
        tampered[tampered.count - 1] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try Box.open(tampered, nonce: nonce, from: a.publicKey, to: b) }
    }
}
