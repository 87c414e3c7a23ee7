import Foundation
import MeishiCard
import MeishiCrypto

extension Home {
    /// The P-256 key that issues the identity's Solidarity cards (docs/PROTOCOL.md 6.3).
    public var solidarityKeyPath: String { path + "/solidarity.key" }
}

/// The identity's P-256 key for Solidarity cards, made on first use and kept beside
/// `identity.key` under the same protection: none, or the same passphrase (`KeyFile`).
public struct SolidarityKeyStore: Sendable {
    public static let format = "meishi-p256-v1"
    public let home: Home

    public init(home: Home) { self.home = home }

    /// The did:key of the stored key, read without the secret; nil when there is none yet.
    public func storedDID() -> String? {
        guard let json = try? read(), case .string(let did)? = json["did"], DIDKey.p256PublicKey(from: did) != nil else { return nil }
        return did
    }

    /// The key, made and stored when the identity has none yet. Asks `passphrases` when the
    /// identity key is encrypted; a new key is sealed under that passphrase once it has opened
    /// `identity.key`, so both files always open with the same one.
    public func loadOrCreate(for identity: PublicIdentity, passphrases: PassphraseSource) throws(MeishiError) -> P256.SigningKey {
        if SecureFile.exists(home.solidarityKeyPath) { return try load(for: identity, passphrases: passphrases) }
        let identities = IdentityStore(home: home)
        let key = P256.SigningKey()
        let did = DIDKey.did(for: key.publicKey)
        var members: [String: JSONValue] = [
            "format": .string(Self.format), "did": .string(did), "identity": .string(identity.did),
        ]
        var passphrase: SecureBytes?
        if try identities.isEncrypted() {
            guard let given = passphrases.passphrase(forKeyAt: home.secretKeyPath) else { throw .passphraseNeeded }
            // The new key gets the identity's passphrase, and only a passphrase that opens it.
            _ = try identities.load(passphrases: GivenPassphrase(value: given))
            passphrase = given
        }
        try KeyFile.addSecret(key.rawRepresentation, to: &members, passphrase: passphrase,
                              associatedData: associatedData(did: did, identity: identity.did), limits: .moderate)
        try KeyFile.create(&members, at: home.solidarityKeyPath)
        return key
    }

    /// Loads the stored key; refuses a file others can read, one made for another identity, and
    /// a wrong passphrase.
    public func load(for identity: PublicIdentity, passphrases: PassphraseSource) throws(MeishiError) -> P256.SigningKey {
        var json = try read()
        guard case .string(let did)? = json["did"], case .string(let owner)? = json["identity"] else { throw damaged() }
        guard owner == identity.did else { throw .solidarityKeyOfOtherIdentity(path: home.solidarityKeyPath, owner: owner) }
        let secret = try KeyFile.openSecret(&json, path: home.solidarityKeyPath, passphrases: passphrases,
                                            associatedData: associatedData(did: did, identity: owner), damaged: damaged())
        guard let key = try? P256.SigningKey(rawRepresentation: secret), DIDKey.did(for: key.publicKey) == did else { throw damaged() }
        return key
    }

    private func read() throws(MeishiError) -> JSONValue {
        let path = home.solidarityKeyPath
        var bytes = try KeyFile.read(path, missing: .cannotRead(path: path, reason: "no Solidarity key yet", missing: true))
        defer { wipe(&bytes) }
        guard let json = try? StrictJSONParser.parse(bytes), json["format"] == .string(Self.format) else { throw damaged() }
        return json
    }

    /// Binds the sealed key to its own DID and to the identity it belongs to.
    func associatedData(did: String, identity: String) -> [UInt8] {
        Array(Self.format.utf8) + [0] + Array(did.utf8) + [0] + Array(identity.utf8)
    }

    private func damaged() -> MeishiError { .identityDamaged(path: home.solidarityKeyPath) }
}

/// A passphrase already in hand, offered to a second file so the person is asked once.
struct GivenPassphrase: PassphraseSource {
    let value: SecureBytes
    func passphrase(forKeyAt path: String) -> SecureBytes? { value }
    func newPassphrase() throws(MeishiError) -> SecureBytes? { value }
}
