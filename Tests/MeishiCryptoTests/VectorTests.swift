import Foundation
import Testing
import MeishiCard
@testable import MeishiCrypto

/// Known-answer tests from fixtures/external (copies of RFC 8032, Wycheproof and W3C did:key data).
@Suite struct Ed25519VectorTests {
    @Test func rfc8032Section7_1() throws {
        let vectors = try Fixtures.json("external/rfc8032_ed25519.json") as! [[String: Any]]
        #expect(vectors.count == 5)
        for v in vectors {
            let key = try Ed25519.SigningKey(seed: SecureBytes(copying: Hex.decode(v["seed"] as! String)!))
            #expect(Hex.encode(key.publicKey.rawRepresentation) == v["public_key"] as! String)
            let message = Hex.decode(v["message"] as! String)!
            let signature = key.signature(for: message)
            #expect(Hex.encode(signature.rawRepresentation) == v["signature"] as! String)
            #expect(key.publicKey.isValidSignature(signature, for: message))
            #expect(!key.publicKey.isValidSignature(signature, for: message + [0]))
        }
    }

    @Test func wycheproof() throws {
        let root = try Fixtures.json("external/ed25519_test.json") as! [String: Any]
        var checked = 0
        for group in root["testGroups"] as! [[String: Any]] {
            let pkHex = (group["publicKey"] as! [String: Any])["pk"] as! String
            let key = try? Ed25519.PublicKey(rawRepresentation: Hex.decode(pkHex)!)
            for t in group["tests"] as! [[String: Any]] {
                let expectValid = t["result"] as! String == "valid"
                let sig = try? Ed25519.Signature(rawRepresentation: Hex.decode(t["sig"] as! String)!)
                let ok = key.map { k in sig.map { k.isValidSignature($0, for: Hex.decode(t["msg"] as! String)!) } ?? false } ?? false
                #expect(ok == expectValid, "tcId \(t["tcId"]!): \(t["comment"]!)")
                checked += 1
            }
        }
        #expect(checked == root["numberOfTests"] as! Int)
    }

    @Test func w3cDidKeySeeds() throws {
        let vectors = try Fixtures.json("external/did_key_ed25519.json") as! [[String: Any]]
        for v in vectors {
            let key = try Ed25519.SigningKey(seed: SecureBytes(copying: Hex.decode(v["seed"] as! String)!))
            #expect(DIDKey.did(for: key.publicKey) == v["did"] as! String)
            #expect(DIDKey.ed25519PublicKey(from: v["did"] as! String) == key.publicKey)
        }
    }

    @Test func refusesBadLengthsAndPoints() {
        #expect(throws: CryptoError.invalidLength(what: "Ed25519 public key", expected: 32, actual: 31)) {
            try Ed25519.PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 31))
        }
        // The identity point (small order) is not a valid key, and nothing verifies under it.
        let identityPoint = try! Ed25519.PublicKey(rawRepresentation: [1] + [UInt8](repeating: 0, count: 31))
        #expect(!identityPoint.isValidPoint)
        #expect(!identityPoint.isValidSignature(try! Ed25519.Signature(rawRepresentation: [1] + [UInt8](repeating: 0, count: 63)),
                                                for: [UInt8]()))
        #expect(Ed25519.SigningKey().publicKey.isValidPoint)
    }
}

@Suite struct X25519VectorTests {
    @Test func wycheproof() throws {
        let root = try Fixtures.json("external/x25519_test.json") as! [String: Any]
        var checked = 0
        for group in root["testGroups"] as! [[String: Any]] {
            for t in group["tests"] as! [[String: Any]] {
                let sk = try X25519.SecretKey(rawRepresentation: SecureBytes(copying: Hex.decode(t["private"] as! String)!))
                let pk = try X25519.PublicKey(rawRepresentation: Hex.decode(t["public"] as! String)!)
                let expected = t["shared"] as! String
                let result = t["result"] as! String
                do {
                    let shared = try sk.sharedSecret(with: pk)
                    #expect(Hex.encode(shared.exposedBytes()) == expected, "tcId \(t["tcId"]!)")
                    #expect(result != "invalid")
                } catch {
                    // libsodium refuses an all-zero shared secret; Wycheproof calls those "acceptable".
                    #expect(error == .weakSharedSecret)
                    #expect(expected == String(repeating: "0", count: 64), "tcId \(t["tcId"]!)")
                }
                checked += 1
            }
        }
        #expect(checked > 500)
    }
}

@Suite struct BoxAndPassphraseTests {
    @Test func sealedBoxRoundTrip() throws {
        let alice = X25519.SecretKey()
        let mallory = X25519.SecretKey()
        let ct = try SealedBox.seal(Array("see you at 7".utf8), to: alice.publicKey)
        #expect(ct.count == 12 + SealedBox.overhead)
        #expect(try SealedBox.open(ct, with: alice) == Array("see you at 7".utf8))
        #expect(throws: CryptoError.authenticationFailed) { try SealedBox.open(ct, with: mallory) }
        var tampered = ct
        tampered[tampered.count - 1] ^= 1
        #expect(throws: CryptoError.authenticationFailed) { try SealedBox.open(tampered, with: alice) }
        // libsodium refuses to seal to a low-order point: an error, never a zero buffer.
        let lowOrder = try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        #expect(throws: CryptoError.invalidPublicKey) { try SealedBox.seal([1, 2, 3], to: lowOrder) }
    }

    /// Secrets move between guarded buffers without passing through arrays; strings are zeroed in place.
    @Test func secureBytesSlicesAndWipes() {
        let a = SecureBytes(copying: [1, 2, 3]), b = SecureBytes(copying: [4, 5])
        let joined = SecureBytes(concatenating: [a, b])
        #expect(joined.exposedBytes() == [1, 2, 3, 4, 5])
        #expect(joined.subrange(1..<4).exposedBytes() == [2, 3, 4])
        #expect(joined.subrange(5..<5).count == 0)
        var text = String(repeating: "s3cr3t-", count: 20)
        let shared = text
        wipe(&text)
        #expect(text.isEmpty)
        #expect(shared.utf8.allSatisfy { $0 == 0 }, "the storage another copy shares is zeroed too")
        var bytes: [UInt8] = [9, 9, 9]
        wipe(&bytes)
        #expect(bytes == [0, 0, 0])
    }

    @Test func passphraseProtection() throws {
        let secret = SecureBytes(randomCount: 64)
        let pass = SecureBytes(copying: Array("correct horse".utf8))
        let sealed = try PassphraseProtection.seal(secret, passphrase: pass, associatedData: [1, 2], limits: .interactive)
        #expect(try PassphraseProtection.open(sealed, passphrase: pass, associatedData: [1, 2]) == secret)
        #expect(throws: CryptoError.authenticationFailed) {
            try PassphraseProtection.open(sealed, passphrase: SecureBytes(copying: Array("wrong".utf8)), associatedData: [1, 2])
        }
        #expect(throws: CryptoError.authenticationFailed) {
            try PassphraseProtection.open(sealed, passphrase: pass, associatedData: [1, 3])
        }
        var absurd = sealed
        absurd.limits.memoryBytes = 1 << 40
        #expect(throws: CryptoError.keyDerivationFailed) { try PassphraseProtection.open(absurd, passphrase: pass, associatedData: [1, 2]) }
    }

    @Test func sha256AndRandom() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SecureRandom.bytes(32) != SecureRandom.bytes(32))
        let u = ShareID.random()
        #expect(ShareID.isValid(u), "\(u)")
    }
}
