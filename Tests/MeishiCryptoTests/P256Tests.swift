import Foundation
import Testing
import MeishiCard
import MeishiCrypto

/// P-256 (swift-crypto behind meishi's own types): a known answer, encodings, and the points and
/// signatures that must be refused.
@Suite struct P256Tests {
    @Test func keyEncodingsAndKnownAnswer() throws {
        let key = P256.SigningKey().publicKey
        let good = key.compressedRepresentation
        #expect(try P256.PublicKey(compressedRepresentation: good) == key)
        for prefix: UInt8 in [0x00, 0x04, 0x05] {
            #expect(throws: CryptoError.invalidPublicKey) { try P256.PublicKey(compressedRepresentation: [prefix] + good.dropFirst()) }
        }
        // x = p (not below the field prime) and an x with no point on the curve.
        let p = Hex.decode("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")!
        #expect(throws: CryptoError.invalidPublicKey) { try P256.PublicKey(compressedRepresentation: [0x02] + p) }
        var noPoint: [UInt8]?
        for b in UInt8(0)...255 where noPoint == nil {
            let candidate = [0x02] + [UInt8](repeating: 0, count: 31) + [b]
            if (try? P256.PublicKey(compressedRepresentation: candidate)) == nil { noPoint = candidate }
        }
        #expect(noPoint != nil)
        #expect(throws: CryptoError.self) { try P256.PublicKey(compressedRepresentation: good.dropLast()) }
        // The DID accepts only the canonical spelling of a compressed key.
        let did = DIDKey.did(forP256: good)
        #expect(DIDKey.p256PublicKey(from: did) == good)
        #expect(DIDKey.p256PublicKey(from: did + "1") == nil)
        #expect(DIDKey.p256PublicKey(from: "did:key:z" + Base58.encode(DIDKey.p256Multicodec + [0x04] + good.dropFirst())) == nil)
        #expect(DIDKey.p256PublicKey(from: "did:key:z" + String(repeating: "D", count: 5000)) == nil)
        // RFC 6979 A.2.5: the P-256 key and its deterministic SHA-256 signature of "sample".
        let signer = try P256.SigningKey(rawRepresentation: SecureBytes(copying:
            Hex.decode("c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721")!))
        #expect(signer.publicKey.x == Hex.decode("60fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"))
        #expect(signer.publicKey.y == Hex.decode("7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"))
        let rfc = try P256.Signature(rawRepresentation: Hex.decode(
            "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8")!)
        #expect(signer.publicKey.isValidSignature(rfc, for: Array("sample".utf8)))
        #expect(!signer.publicKey.isValidSignature(rfc, for: Array("samplf".utf8)))
        #expect(try P256.Signature(derRepresentation: rfc.derRepresentation) == rfc)
        // Non-strict DER (a needless leading zero in r) is refused.
        var der = rfc.derRepresentation
        der.insert(0x00, at: 4)
        der[3] += 1
        der[1] += 1
        #expect(throws: CryptoError.invalidSignatureEncoding) { try P256.Signature(derRepresentation: der) }
        #expect(throws: CryptoError.invalidPrivateKey) {
            try P256.SigningKey(rawRepresentation: SecureBytes(copying: [UInt8](repeating: 0, count: 32)))
        }
        let own = signer.signature(for: [1, 2, 3])
        #expect(signer.publicKey.isValidSignature(own, for: [1, 2, 3]))
    }

}
