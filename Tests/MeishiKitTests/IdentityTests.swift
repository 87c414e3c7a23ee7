import Foundation
import Testing
import MeishiCard
import MeishiCrypto
@testable import MeishiKit

struct FixedPassphrase: PassphraseSource {
    let value: String?
    func passphrase(prompt: String) -> SecureBytes? { value.map { SecureBytes(copying: Array($0.utf8)) } }
    func newPassphrase() throws(MeishiFailure) -> SecureBytes? { passphrase(prompt: "") }
}

@Suite final class IdentityTests {
    let dir = Fixtures.temporaryDirectory()
    deinit { try? FileManager.default.removeItem(atPath: dir) }
    var home: Home { Home(path: dir + "/home") }

    @Test func createsPrivateFilesAndLoadsThem() throws {
        let store = IdentityStore(home: home)
        let (created, backup) = try store.create(passphrase: nil, force: false, now: Date())
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
        let (first, _) = try store.create(passphrase: nil, force: false, now: Date())
        #expect(throws: MeishiFailure.self) { try store.create(passphrase: nil, force: false, now: Date()) }
        #expect(try store.loadPublic().did == first.did)
        let (second, backup) = try store.create(passphrase: nil, force: true, now: Date(timeIntervalSince1970: 1000))
        #expect(backup == home.secretKeyPath + ".bak-1000")
        #expect(second.did != first.did)
        #expect(SecureFile.exists(backup!))
        #expect(SecureFile.mode(of: backup!) == 0o600)
    }

    @Test func refusesKeyReadableByOthers() throws {
        let store = IdentityStore(home: home)
        _ = try store.create(passphrase: nil, force: false, now: Date())
        chmod(home.secretKeyPath, 0o644)
        do {
            _ = try store.load(passphrases: FixedPassphrase(value: nil))
            Issue.record("loaded a 0644 key")
        } catch {
            #expect(error.status == .permission)
            #expect(error.hint == "chmod 600 \(home.secretKeyPath)")
        }
    }

    @Test func passphraseProtectedKey() throws {
        let store = IdentityStore(home: home)
        let (created, _) = try store.create(passphrase: SecureBytes(copying: Array("hunter2 but longer".utf8)), force: false,
                                            now: Date(), limits: .interactive)
        #expect(try store.isEncrypted())
        let text = try String(contentsOfFile: home.secretKeyPath, encoding: .utf8)
        #expect(text.contains("argon2id-xchacha20poly1305"))
        #expect(try store.load(passphrases: FixedPassphrase(value: "hunter2 but longer")).did == created.did)
        for wrong in [FixedPassphrase(value: "hunter3"), FixedPassphrase(value: nil)] {
            do {
                _ = try store.load(passphrases: wrong)
                Issue.record("loaded with a wrong passphrase")
            } catch {
                #expect(error.status == .permission)
            }
        }
    }

    @Test func damagedKeyFileIsAClearError() throws {
        let store = IdentityStore(home: home)
        _ = try store.create(passphrase: nil, force: false, now: Date())
        try SecureFile.write(Array("{\"format\":\"meishi-identity-v1\"}".utf8), to: home.secretKeyPath)
        #expect(throws: MeishiFailure.self) { try store.load(passphrases: FixedPassphrase(value: nil)) }
    }

    @Test func fingerprintIsStable() {
        let fp = PublicIdentity.fingerprint(of: [UInt8](repeating: 0, count: 32))
        #expect(fp.split(separator: " ").count == 6)
        #expect(fp.allSatisfy { $0 == " " || $0.isNumber })
        #expect(fp == PublicIdentity.fingerprint(of: [UInt8](repeating: 0, count: 32)))
    }
}

@Suite struct HomeAndDurationTests {
    @Test func homeResolutionOrder() throws {
        #expect(try Home.resolve(flag: "/x", environment: ["MEISHI_HOME": "/y", "HOME": "/h"]).path == "/x")
        #expect(try Home.resolve(flag: nil, environment: ["MEISHI_HOME": "/y", "XDG_DATA_HOME": "/d", "HOME": "/h"]).path == "/y")
        #expect(try Home.resolve(flag: nil, environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"]).path == "/d/meishi")
        #expect(try Home.resolve(flag: nil, environment: ["HOME": "/h"]).path == "/h/.local/share/meishi")
        #expect(throws: MeishiFailure.self) { try Home.resolve(flag: nil, environment: [:]) }
    }

    @Test(arguments: [("30", Int64(30)), ("90s", 90), ("10m", 600), ("24h", 86400), ("7d", 604_800), ("10M", 600)] as [(String, Int64)])
    func durations(_ text: String, _ seconds: Int64) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test(arguments: ["", "m", "-5", "1.5m", "10w", "ten"])
    func badDurations(_ text: String) {
        #expect(DurationText.seconds(text) == nil)
    }
}

@Suite struct SignAndVerifyTests {
    @Test func signsWhatTheCardDisclosesAndVerifies() throws {
        let id = PayloadVectorTests.identity
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let p = try CardService.signedPayload(card: PayloadVectorTests.typicalCard, level: .public, only: nil, identity: id, now: now)
        #expect(p.cardFields["email"] == nil && p.cardFields["url"] == .multiple(["https://example.org/mei"]))
        #expect(p.cardFields["address"] == nil)
        let v = try CardService.verify(p.canonicalJSON, now: now.addingTimeInterval(30))
        #expect(v.ageSeconds == 30)
        #expect(throws: PayloadError.fromTheFuture(seconds: 601)) {
            try CardService.verify(p.canonicalJSON, now: now.addingTimeInterval(-601))
        }
        _ = try CardService.verify(p.canonicalJSON, now: now.addingTimeInterval(-601), maximumSkew: 3600)
    }

    @Test func refusesCardWithoutSharedName() {
        var card = Card()
        try! card.set(.name, "Secret", level: .personal)
        #expect(throws: MeishiFailure.self) {
            try CardService.signedPayload(card: card, level: .public, only: nil, identity: PayloadVectorTests.identity, now: Date())
        }
    }
}

@Suite struct PayloadSizeTests {
    @Test func computedSizeMatchesCanonicalJSON() throws {
        // signedPayload checks the 16 KiB limit from the signed bytes; this keeps that arithmetic honest.
        let p = try CardService.signedPayload(card: PayloadVectorTests.typicalCard, level: .personal, only: nil,
                                              identity: PayloadVectorTests.identity, now: Date())
        #expect(p.canonicalJSON.count == p.signingInput.count - 15 + 108)
        var big = Card()
        try big.set(.name, "N")
        for i in 0..<63 { try big.add(.url, "https://example.org/" + String(repeating: "a", count: 230) + "\(i)", level: .public) }
        #expect(throws: MeishiFailure.self) {
            try CardService.signedPayload(card: big, level: .public, only: nil, identity: PayloadVectorTests.identity, now: Date())
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
