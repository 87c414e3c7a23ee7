import Foundation
import Testing
import MeishiCard
import MeishiText
import MeishiCrypto
@testable import MeishiKit

/// The card layer's Solidarity verifier at a fixed time.
func verifySolidarity(_ text: String, now: Int64) throws(SolidarityError) -> VerifiedSolidarityCard {
    try CardVerifier(clock: { now }).verify(solidarity: text)
}

/// A field name the test knows is valid.
func field(_ name: String) -> FieldName { try! FieldName(name) }

/// The Solidarity card vectors in fixtures/solidarity (made by tools/solidarity-vectors.py, an
/// independent Python implementation): each file names its verdict in its header.
@Suite struct SolidarityVectorTests {
    struct Vector {
        let name: String
        let verdict: String
        let now: Int64
        let text: String
    }

    static func vectors() throws -> [Vector] {
        let dir = Fixtures.url("solidarity")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".txt") }.sorted()
        return try names.map { name in
            let lines = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8).split(separator: "\n")
            func header(_ key: String) -> String? {
                lines.first { $0.hasPrefix("# \(key): ") }.map { String($0.dropFirst(key.count + 4)) }
            }
            let body = lines.filter { !$0.hasPrefix("#") }.joined(separator: "\n")
            return Vector(name: name, verdict: header("verdict")!, now: Int64(header("now")!)!, text: body)
        }
    }

    static func verdict(_ text: String, now: Int64) -> String {
        do {
            _ = try verifySolidarity(text, now: now)
            return "valid"
        } catch {
            return error.verdict
        }
    }

    @Test func everyVectorHasItsVerdict() throws {
        let vectors = try Self.vectors()
        #expect(vectors.count >= 20)
        #expect(Set(vectors.map(\.verdict)).isSuperset(of: ["valid", "bad-signature", "key-mismatch", "expired", "unsupported-algorithm",
                                                            "not-yet-valid", "malformed"]))
        for v in vectors {
            #expect(Self.verdict(v.text, now: v.now) == v.verdict, "\(v.name)")
        }
    }

    @Test func validVectorMapsToMeishiFields() throws {
        let text = try #require(try Self.vectors().first { $0.name.hasPrefix("01-") }).text
        let card = try verifySolidarity(text, now: 1_767_312_000)
        #expect(card.card.fields[field("name")] == ["Aiko Watanabe"])
        #expect(card.card.fields[field("title")] == ["Coordinator"])
        #expect(card.card.fields[field("org")] == ["Shibuya Solidarity Kitchen"])
        #expect(card.card.fields[field("email")] == ["aiko@example.net"])
        #expect(card.card.fields[field("phone")] == ["+81 80 1111 2222"])
        #expect(card.card.fields[field("url")] == ["https://example.net/aiko"])
        #expect(card.card.fields[field("note")] == ["Organiser, Tokyo mutual aid"])
        #expect(card.card.fields[field("x-pronouns")] == ["she/her"])
        #expect(card.card.linkedDIDs == ["did:key:z6MkehRgf7yJbgaGfYsdoAsKdBPE3dj2CYhowQdcjqSJgvVd"])
        #expect(card.ageSeconds == 86400)
        #expect(card.card.issuedAt == 1_767_225_600)
        // The flat form: worksFor as a schema.org Organization, one email as a string.
        let flat = try #require(try Self.vectors().first { $0.name.hasPrefix("03-") }).text
        let f = try verifySolidarity(flat, now: 1_767_312_000)
        #expect(f.card.fields[field("org")] == ["Shibuya Solidarity Kitchen"])
        #expect(f.card.fields[field("email")] == ["aiko@example.net"])
        #expect(f.card.expires == 4_102_444_800)
    }

    /// The key Python wrote is the key meishi reads from the DID and from the JWK.
    @Test func pythonHolderKeyAgrees() throws {
        let holder = try #require(try Fixtures.json("solidarity/holder.json") as? [String: Any])
        let did = try #require(holder["did"] as? String)
        let jwk = try #require(holder["jwk"] as? [String: String])
        let key = try P256.PublicKey(x: Base64URL.decode(jwk["x"]!)!, y: Base64URL.decode(jwk["y"]!)!)
        #expect(DIDKey.did(forP256: key.compressedRepresentation) == did)
        #expect(DIDKey.p256PublicKey(from: did) == key.compressedRepresentation)
        #expect(did.hasPrefix("did:key:zDn"))
        let scalarHex = try #require(holder["privateScalar"] as? String)
        let scalar = try #require(Hex.decode(scalarHex))
        #expect(try P256.SigningKey(rawRepresentation: SecureBytes(copying: scalar)).publicKey == key)
    }
}

/// Hostile input the vectors do not cover, built here from a valid card.
@Suite struct SolidarityParserAttackTests {
    static let now: Int64 = 1_767_312_000

    static var valid: String {
        get throws { try #require(try SolidarityVectorTests.vectors().first { $0.name.hasPrefix("01-") }).text }
    }

    static func parts() throws -> [String] { try valid.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    static func verdict(_ text: String) -> String { SolidarityVectorTests.verdict(text, now: now) }

    /// Re-encodes a JSON segment after `edit`, keeping the other segments.
    static func editing(_ index: Int, _ edit: (String) -> String) throws -> String {
        var p = try parts()
        p[index] = Base64URL.encode(Array(edit(String(decoding: Base64URL.decode(p[index])!, as: UTF8.self)).utf8))
        return p.joined(separator: ".")
    }

    @Test func oversizedInputAndSegments() throws {
        let p = try Self.parts()
        let big = p[0] + "." + p[1] + String(repeating: "A", count: 9000) + "." + p[2]
        #expect(Self.verdict(big) == "malformed")
        #expect(throws: SolidarityError.tooLarge(bytes: big.utf8.count)) { try SolidarityCard.parse(big) }
        let longSignature = p[0] + "." + p[1] + "." + Base64URL.encode([UInt8](repeating: 1, count: 200))
        #expect(Self.verdict(longSignature) == "malformed")
        // Deep nesting inside a claim stops at the JSON parser's depth limit.
        let deep = try Self.editing(1) { $0.replacingOccurrences(of: "\"jti\":", with: "\"deep\":" + String(repeating: "[", count: 40)
                                                                   + String(repeating: "]", count: 40) + ",\"jti\":") }
        #expect(Self.verdict(deep) == "malformed")
    }

    @Test func badBase64URL() throws {
        let p = try Self.parts()
        let middle = p[1].index(p[1].startIndex, offsetBy: 40)
        for bad in [p[1] + "=", p[1][..<middle] + "+" + p[1][middle...], p[1][..<middle] + "/" + p[1][middle...], "*" + p[1].dropFirst(),
                    String(p[1].dropLast(3)) + "A", p[1] + "\u{0}", p[1] + " "] {
            #expect(Self.verdict([p[0], bad, p[2]].joined(separator: ".")) == "malformed", "\(bad.suffix(8))")
        }
        // A signature segment with non-zero trailing bits (a second spelling of the same bytes).
        var sig = Array(p[2])
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        sig[sig.count - 1] = alphabet[alphabet.firstIndex(of: sig.last!)! ^ 1]
        #expect(Self.verdict(p[0] + "." + p[1] + "." + String(sig)) == "malformed")
        #expect(Self.verdict(p[0] + "." + p[1] + ".") == "malformed")
        #expect(Self.verdict("." + p[1] + "." + p[2]) == "malformed")
    }

    @Test func algorithmVariants() throws {
        for alg in ["none", "ES256 ", " ES256", "es256", "ES384", "EdDSA", "HS256", "ES256\\u0000", "ES\\u00325\\u0036 ", "ＥＳ256"] {
            let text = try Self.editing(0) { $0.replacingOccurrences(of: "\"ES256\"", with: "\"\(alg)\"") }
            #expect(Self.verdict(text) == "unsupported-algorithm", "\(alg)")
        }
        let number = try Self.editing(0) { $0.replacingOccurrences(of: "\"ES256\"", with: "256") }
        #expect(Self.verdict(number) == "malformed")
        let twice = try Self.editing(0) { $0.replacingOccurrences(of: "{\"alg\":\"ES256\"", with: "{\"alg\":\"ES256\",\"alg\":\"none\"") }
        #expect(Self.verdict(twice) == "malformed")
        // The reason names a hostile alg as it came (cut to 32 characters): the CLI escapes it where
        // it leaves, for a terminal or for JSON (trial 7, F20).
        let escape = try Self.editing(0) { $0.replacingOccurrences(of: "\"ES256\"", with: "\"\\u001b[2J\"") }
        do {
            _ = try SolidarityCard.parse(escape)
            Issue.record("an escape in alg was accepted")
        } catch {
            guard case .unsupportedAlgorithm(let shown) = error else { Issue.record("\(error)"); return }
            #expect(shown == "algorithm \"\u{1B}[2J\"")
        }
    }

    @Test func timeClaims() throws {
        for bad in ["-1", "1e300", "9007199254740992", "1767225600.5", "\"1767225600\"", "null", "true"] {
            let text = try Self.editing(1) { $0.replacingOccurrences(of: "\"iat\":1767225600", with: "\"iat\":\(bad)") }
            #expect(Self.verdict(text) == "malformed", "iat \(bad)")
            let exp = try Self.editing(1) { $0.replacingOccurrences(of: "\"nbf\":1767225600", with: "\"nbf\":1767225600,\"exp\":\(bad)") }
            #expect(Self.verdict(exp) == "malformed", "exp \(bad)")
        }
        // The edits above break the signature; the time rules themselves run on a valid card.
        let card = try verifySolidarity(try Self.valid, now: Self.now)
        #expect(card.card.notBefore == 1_767_225_600)
        #expect(Self.verdict(try Self.valid) == "valid")
        #expect(SolidarityVectorTests.verdict(try Self.valid, now: 1_767_225_600 - 600) == "valid")
        #expect(SolidarityVectorTests.verdict(try Self.valid, now: 1_767_225_600 - 601) == "not-yet-valid")
    }

    @Test func keysOfOtherCurvesAndBadPoints() throws {
        let holder = try #require(try Fixtures.json("solidarity/holder.json") as? [String: Any])
        let jwk = try #require(holder["jwk"] as? [String: String])
        // A y that is not the curve's for this x.
        var y = Base64URL.decode(jwk["y"]!)!
        y[31] ^= 1
        let offCurve = try Self.editing(1) { $0.replacingOccurrences(of: jwk["y"]!, with: Base64URL.encode(y)) }
        #expect(Self.verdict(offCurve) == "key-mismatch")
        for (kty, crv) in [("OKP", "Ed25519"), ("EC", "secp256k1"), ("RSA", "P-256")] {
            let other = try Self.editing(1) { $0.replacingOccurrences(of: "\"crv\":\"P-256\"", with: "\"crv\":\"\(crv)\"")
                .replacingOccurrences(of: "\"kty\":\"EC\"", with: "\"kty\":\"\(kty)\"") }
            #expect(Self.verdict(other) == "key-mismatch", "\(kty) \(crv)")
        }
        let short = try Self.editing(1) { $0.replacingOccurrences(of: jwk["x"]!, with: Base64URL.encode(Base64URL.decode(jwk["x"]!)!.dropFirst())) }
        #expect(Self.verdict(short) == "key-mismatch")
        let noJWK = try Self.editing(1) { $0.replacingOccurrences(of: "\"publicKeyJwk\"", with: "\"otherJwk\"") }
        #expect(Self.verdict(noJWK) == "key-mismatch")
    }

    @Test func hostileTextIsKeptAndMadeSafeOnlyForDisplay() throws {
        let text = try #require(try SolidarityVectorTests.vectors().first { $0.name.hasPrefix("04-") }).text
        let card = try verifySolidarity(text, now: Self.now)
        let name = try #require(card.card.name)
        #expect(name.unicodeScalars.contains("\u{1B}") && name.unicodeScalars.contains("\u{202E}"))
        let shown = TerminalText.sanitized(name)
        #expect(!shown.unicodeScalars.contains(where: TerminalText.isUnsafe))
        #expect(shown.contains("\\u{1B}") && shown.contains("\\u{202E}"))
    }

    @Test func otherSolidarityKinds() throws {
        #expect(SolidarityQR.unsupported("sqc1.abc.0.3.deadbeef.AAAA") == .chunk)
        #expect(SolidarityQR.unsupported("openid4vp://?client_id=x&request_uri=y") == .openID)
        #expect(SolidarityQR.unsupported("sce1:abcdef") == .zkProof)
        #expect(SolidarityQR.unsupported(#"{"encryptedPayload":"AAAA","version":2}"#) == .zkProof)
        #expect(SolidarityQR.unsupported(#"{"snapshot":{"name":"A"},"version":2}"#) == nil)
        #expect(SolidarityQR.unsupported(#"{"version":1,"shareId":"x"}"#) == nil)
        let envelope = #"{"snapshot":{"cardId":"c1","company":"Kitchen","emails":["a@example.net"],"name":"Aiko","phones":["+81 80 1111 2222"],"title":"Coordinator"},"version":2}"#
        let c = try #require(SolidarityQR.plaintextEnvelope(envelope))
        #expect(c.fields == [.name: ["Aiko"], .org: ["Kitchen"], .email: ["a@example.net"], .phone: ["+81 80 1111 2222"],
                             .title: ["Coordinator"]])
        #expect(SolidarityQR.plaintextEnvelope(#"{"snapshot":{"name":"A"},"snapshot":{"name":"B"},"version":2}"#) == nil)
        let did = DIDKey.did(forP256: P256.SigningKey().publicKey.compressedRepresentation)
        let link = try #require(SolidarityQR.contactLink("solidarity://contact?name=Aiko%20Watanabe&job=Coordinator&did=\(did)"))
        #expect(link.fields == [.name: ["Aiko Watanabe"], .title: ["Coordinator"]])
        #expect(link.did == did)
        #expect(SolidarityQR.contactLink("solidarity://contact?name=A&did=did:key:zNotAKey")?.did == nil)
        #expect(SolidarityQR.contactLink("airmeishi://contact?name=Ken")?.format == .airmeishiLink)
        #expect(SolidarityQR.contactLink("https://example.net/?name=A") == nil)
    }
}

/// `card qr --solidarity` issues a card that meishi's own verifier accepts, from a key kept
/// beside the identity.
@Suite struct SolidarityIssueTests {
    @Test func issuedCardVerifiesAndKeyIsReused() throws {
        let home = Home(path: Fixtures.temporaryDirectory() + "/home")
        let now: Int64 = 1_795_000_000
        let (identity, _) = try IdentityStore(home: home).create(passphrase: nil, force: false, now: now)
        var card = Card()
        try card.set(.name, "Mei Tanaka")
        try card.add(.email, "mei@example.org")
        try card.set(try FieldName("address"), "1-2-3 Shibuya")
        let none = FixedPassphrase(value: nil)
        let text = try SolidarityService.issue(card: card, level: .professional, only: nil, home: home, passphrases: none, now: now)
        let verified = try verifySolidarity(text, now: now)
        #expect(verified.card.fields[field("name")] == ["Mei Tanaka"])
        #expect(verified.card.fields[field("email")] == ["mei@example.org"])
        #expect(verified.card.fields[field("address")] == nil, "address is personal: not shared at professional")
        #expect(verified.card.linkedDIDs == [identity.did])
        #expect(verified.card.expires == nil && verified.card.notBefore == 1_795_000_000)
        let again = try SolidarityService.issue(card: card, level: .public, only: nil, home: home, passphrases: none, now: now)
        #expect(try verifySolidarity(again, now: now).did == verified.did)
        #expect(SolidarityKeyStore(home: home).storedDID() == verified.did)
        #expect(SecureFile.mode(of: home.solidarityKeyPath) == 0o600)
        // Storing one's own Solidarity card is refused.
        #expect(throws: MeishiError.self) { try ContactsService(home: home).add(verified, now: now) }
        // A new identity makes the old key its backup, never reuses it.
        _ = try IdentityStore(home: home).create(passphrase: nil, force: true, now: now)
        #expect(!SecureFile.exists(home.solidarityKeyPath))
        #expect(SecureFile.exists(home.solidarityKeyPath + ".bak-1795000000"))
    }

    @Test func passphraseProtectsTheKeyLikeTheIdentity() throws {
        let home = Home(path: Fixtures.temporaryDirectory() + "/home")
        let now: Int64 = 1_795_000_000
        let store = IdentityStore(home: home)
        let pass = SecureBytes(copying: Array("correct horse battery".utf8))
        let (identity, _) = try store.create(passphrase: pass, force: false, now: now, limits: .interactive)
        let keys = SolidarityKeyStore(home: home)
        // A passphrase that does not open identity.key makes no key.
        #expect(throws: MeishiError.self) {
            try keys.loadOrCreate(for: identity.publicIdentity, passphrases: FixedPassphrase(value: "wrong"))
        }
        #expect(!SecureFile.exists(home.solidarityKeyPath))
        let made = try keys.loadOrCreate(for: identity.publicIdentity, passphrases: FixedPassphrase(value: "correct horse battery"))
        let file = try #require(String(data: Data(try SecureFile.read(home.solidarityKeyPath, limit: 4096)), encoding: .utf8))
        #expect(file.contains("\"protection\":\"argon2id-xchacha20poly1305\""))
        #expect(!file.contains(Base64URL.encode(made.rawRepresentation.exposedBytes())))
        let loaded = try keys.loadOrCreate(for: identity.publicIdentity, passphrases: FixedPassphrase(value: "correct horse battery"))
        #expect(loaded.publicKey == made.publicKey)
        #expect(throws: MeishiError.self) {
            try keys.loadOrCreate(for: identity.publicIdentity, passphrases: FixedPassphrase(value: "wrong"))
        }
        // The key is bound to this identity: another one's key file is refused.
        let other = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
        #expect(throws: MeishiError.self) {
            try keys.load(for: other.publicIdentity, passphrases: FixedPassphrase(value: "correct horse battery"))
        }
    }
}
