import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiKit

struct FixedPassphrase: PassphraseSource {
    let value: String?
    func passphrase(forKeyAt path: String) -> SecureBytes? { value.map { SecureBytes(copying: Array($0.utf8)) } }
    func newPassphrase() throws(MeishiError) -> SecureBytes? { passphrase(forKeyAt: "") }
}

@Suite final class IdentityTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var home: Home { Home(path: dir + "/home") }

    @Test func createsPrivateFilesAndLoadsThem() throws {
        let store = IdentityStore(home: home)
        let (created, backup) = try store.create(passphrase: nil, force: false, now: 1_800_000_000)
        #expect(backup == nil)
        #expect(SecureFile.mode(of: home.path) == 0o700)
        #expect(SecureFile.mode(of: home.secretKeyPath) == 0o600)
        #expect(SecureFile.mode(of: home.publicIdentityPath) == 0o600)
        #expect(created.did.hasPrefix("did:key:z6Mk"))
        let loaded = try store.load(passphrases: FixedPassphrase(value: nil))
        #expect(loaded.did == created.did)
        #expect(loaded.boxKey.publicKey == created.boxKey.publicKey)
        #expect(try store.loadPublic() == created.publicIdentity)
        #expect(try store.isEncrypted() == false)
    }

    @Test func refusesToOverwriteAndForceKeepsBackup() throws {
        let store = IdentityStore(home: home)
        let (first, _) = try store.create(passphrase: nil, force: false, now: 1_800_000_000)
        #expect(throws: MeishiError.self) { try store.create(passphrase: nil, force: false, now: 1_800_000_000) }
        #expect(try store.loadPublic().did == first.did)
        let (second, backup) = try store.create(passphrase: nil, force: true, now: 1000)
        #expect(backup == home.secretKeyPath + ".bak-1000")
        #expect(second.did != first.did)
        #expect(SecureFile.exists(backup!))
        #expect(SecureFile.mode(of: backup!) == 0o600)
    }

    @Test func refusesKeyReadableByOthers() throws {
        let store = IdentityStore(home: home)
        _ = try store.create(passphrase: nil, force: false, now: 1_800_000_000)
        chmod(home.secretKeyPath, 0o644)
        do {
            _ = try store.load(passphrases: FixedPassphrase(value: nil))
            Issue.record("loaded a 0644 key")
        } catch {
            guard case .keyExposed(let path, let mode) = error else { Issue.record("\(error)"); return }
            #expect(path == home.secretKeyPath && mode == 0o644)
        }
    }

    @Test func passphraseProtectedKey() throws {
        let store = IdentityStore(home: home)
        let (created, _) = try store.create(passphrase: SecureBytes(copying: Array("hunter2 but longer".utf8)), force: false,
                                            now: 1_800_000_000, limits: .interactive)
        #expect(try store.isEncrypted())
        let text = try String(contentsOfFile: home.secretKeyPath, encoding: .utf8)
        #expect(text.contains("argon2id-xchacha20poly1305"))
        #expect(try store.load(passphrases: FixedPassphrase(value: "hunter2 but longer")).did == created.did)
        for wrong in [FixedPassphrase(value: "hunter3"), FixedPassphrase(value: nil)] {
            do {
                _ = try store.load(passphrases: wrong)
                Issue.record("loaded with a wrong passphrase")
            } catch {
                switch error {
                case .wrongPassphrase, .passphraseNeeded: break
                default: Issue.record("\(error)")
                }
            }
        }
    }

    @Test func damagedKeyFileIsAClearError() throws {
        let store = IdentityStore(home: home)
        _ = try store.create(passphrase: nil, force: false, now: 1_800_000_000)
        try SecureFile.write(Array("{\"format\":\"meishi-identity-v1\"}".utf8), to: home.secretKeyPath)
        #expect(throws: MeishiError.self) { try store.load(passphrases: FixedPassphrase(value: nil)) }
    }

    /// docs/PROTOCOL.md caps Argon2id at 16 passes and 1 GiB: a file asking for more is refused
    /// before any passphrase is asked, rather than run.
    @Test func argon2LimitsOfTheProtocolAreEnforcedOnLoad() throws {
        let store = IdentityStore(home: home)
        _ = try store.create(passphrase: SecureBytes(copying: Array("pw".utf8)), force: false, now: 1_800_000_000, limits: .interactive)
        let original = try String(contentsOfFile: home.secretKeyPath, encoding: .utf8)
        let opsOver = original.replacingOccurrences(of: "\"opslimit\":2", with: "\"opslimit\":17")
        let memOver = original.replacingOccurrences(of: "\"memlimit\":67108864", with: "\"memlimit\":1073741825")
        #expect(opsOver != original && memOver != original)
        for text in [opsOver, memOver] {
            try SecureFile.write(Array(text.utf8), to: home.secretKeyPath)
            struct NeverAsked: PassphraseSource {
                func passphrase(forKeyAt path: String) -> SecureBytes? { Issue.record("asked for a passphrase"); return nil }
                func newPassphrase() throws(MeishiError) -> SecureBytes? { nil }
            }
            #expect {
                try store.load(passphrases: NeverAsked())
            } throws: { error in
                if case MeishiError.keyLimitsTooHigh = error { true } else { false }
            }
        }
        try SecureFile.write(Array(original.utf8), to: home.secretKeyPath)
        _ = try store.load(passphrases: FixedPassphrase(value: "pw"))
    }

    /// `init` learns whether an identity exists without creating one.
    @Test func refuseExistingCreatesNothing() throws {
        let store = IdentityStore(home: home)
        try store.refuseExisting()
        #expect(!SecureFile.exists(home.path))
        _ = try store.create(passphrase: nil, force: false, now: 1)
        #expect(throws: MeishiError.self) { try store.refuseExisting() }
    }

    @Test func fingerprintIsStable() {
        let key = try! Ed25519.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
        let fp = key.fingerprint
        #expect(fp.split(separator: " ").count == 6)
        #expect(fp.allSatisfy { $0 == " " || $0.isNumber })
        #expect(fp == (try! Ed25519.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))).fingerprint)
    }
}

@Suite struct HomeTests {
    @Test func homeResolutionOrder() throws {
        #expect(try Home.resolve(flag: "/x", environment: ["MEISHI_HOME": "/y", "HOME": "/h"], workingDirectory: "/w").path == "/x")
        #expect(try Home.resolve(flag: "rel", environment: [:], workingDirectory: "/w").path == "/w/rel")
        #expect(try Home.resolve(flag: nil, environment: ["MEISHI_HOME": "/y", "XDG_DATA_HOME": "/d", "HOME": "/h"], workingDirectory: "/w").path == "/y")
        #expect(try Home.resolve(flag: nil, environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"], workingDirectory: "/w").path == "/d/meishi")
        #expect(try Home.resolve(flag: nil, environment: ["HOME": "/h"], workingDirectory: "/w").path == "/h/.local/share/meishi")
        #expect(throws: MeishiError.self) { try Home.resolve(flag: nil, environment: [:], workingDirectory: "/w") }
    }
}

@Suite struct SignAndVerifyTests {
    @Test func signsWhatTheCardDisclosesAndVerifies() throws {
        let id = PayloadVectorTests.identity
        let now: Int64 = 1_800_000_000
        let signed = try CardService.sign(PayloadVectorTests.typicalCard, level: .public, only: nil, identity: id, now: now)
        let p = signed.payload
        #expect(p.cardFields[.email] == nil && p.cardFields[.url] == .multiple(["https://example.org/mei"]))
        #expect(p.cardFields[.address] == nil)
        #expect(signed.bytes == p.canonicalJSON)
        let v = try CardVerifier(clock: { now + 30 }).verify(signed.bytes)
        #expect(v.ageSeconds == 30)
        #expect(v.bytes == signed.bytes && v.encoding == .json)
        #expect(throws: PayloadError.fromTheFuture(seconds: 601)) {
            try CardVerifier(clock: { now - 601 }).verify(signed.bytes)
        }
        _ = try CardVerifier(maximumSkew: 3600, clock: { now - 601 }).verify(signed.bytes)
        #expect(throws: PayloadError.tooOld(seconds: 601)) {
            try CardVerifier(maximumAge: 600, clock: { now + 601 }).verify(signed.bytes)
        }
    }

    /// The QR text form verifies to a card that keeps the text it arrived as.
    @Test func qrTextKeepsTheTextReceived() throws {
        let now: Int64 = 1_800_000_000
        let signed = try CardService.sign(PayloadVectorTests.typicalCard, level: .public, only: nil, identity: PayloadVectorTests.identity, now: now)
        let text = CardQRText.encode(signed.payload)
        let v = try CardVerifier(clock: { now }).verify(Array(("  " + text + "\n").utf8))
        #expect(v.encoding == .qrText && v.bytes == Array(text.utf8))
        #expect(v.payload == signed.payload)
    }

    @Test func refusesCardWithoutSharedName() {
        var card = Card()
        try! card.set(.name, "Secret", level: .personal)
        #expect(throws: MeishiError.self) {
            try CardService.sign(card, level: .public, only: nil, identity: PayloadVectorTests.identity, now: 1)
        }
        #expect(throws: CardError.nameNotShared(.public)) { try card.share(at: .public) }
        #expect(throws: CardError.nameNotSelected) { try card.share(at: .personal, only: [.email]) }
        #expect(throws: CardError.noName) { try Card().share(at: .personal) }
    }
}

@Suite struct PayloadSizeTests {
    @Test func oversizedShareIsRefusedWithItsSize() throws {
        var big = Card()
        try big.set(.name, "N")
        for i in 0..<63 { try big.add(.url, "https://example.org/" + String(repeating: "a", count: 230) + "\(i)", level: .public) }
        do {
            _ = try CardService.sign(big, level: .public, only: nil, identity: PayloadVectorTests.identity, now: 1)
            Issue.record("signed an oversized card")
        } catch {
            guard case .shareTooLarge(let bytes) = error else { Issue.record("\(error)"); return }
            #expect(bytes > ProximityPayload.maximumEncodedSize)
        }
    }
}

@Suite struct UTCTimeTests {
    @Test(arguments: [Int64(0), 951_782_400, 1_795_309_941, 4_102_444_800, -86_401, 1_709_164_800])
    func matchesFoundation(_ unix: Int64) {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        #expect(UTCTime.rfc3339(unix) == f.string(from: Date(timeIntervalSince1970: TimeInterval(unix))))
    }
}
