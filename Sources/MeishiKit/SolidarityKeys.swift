import Foundation
import MeishiCard
import MeishiCrypto

extension Home {
    /// The P-256 key that issues the identity's Solidarity cards (docs/PROTOCOL.md 6.3).
    public var solidarityKeyPath: String { path + "/solidarity.key" }
}

/// The identity's P-256 key for Solidarity cards, made on first use and kept beside
/// `identity.key` under the same protection: none, or the same passphrase.
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
    public func loadOrCreate(for identity: PublicIdentity, passphrases: PassphraseSource) throws(MeishiFailure) -> P256.SigningKey {
        if SecureFile.exists(home.solidarityKeyPath) { return try load(for: identity, passphrases: passphrases) }
        let identities = IdentityStore(home: home)
        let key = P256.SigningKey()
        let did = DIDKey.did(forP256: key.publicKey.compressedRepresentation)
        var members: [String: JSONValue] = [
            "format": .string(Self.format), "did": .string(did), "identity": .string(identity.did),
        ]
        if try identities.isEncrypted() {
            guard let passphrase = passphrases.passphrase(prompt: "passphrase for \(home.secretKeyPath): ") else {
                throw MeishiFailure("the secret key is encrypted and no passphrase was given",
                                    hint: "set MEISHI_PASSPHRASE or run meishi on a terminal", status: .permission)
            }
            // The new key gets the identity's passphrase, and only a passphrase that opens it.
            _ = try identities.load(passphrases: GivenPassphrase(value: passphrase))
            let sealed: PassphraseProtection.Sealed
            do {
                sealed = try PassphraseProtection.seal(key.rawRepresentation, passphrase: passphrase,
                                                       associatedData: associatedData(did: did, identity: identity.did))
            } catch {
                throw MeishiFailure("cannot encrypt the Solidarity key: \(error)")
            }
            members["protection"] = .string("argon2id-xchacha20poly1305")
            members["opslimit"] = .number(Double(sealed.limits.operations))
            members["memlimit"] = .number(Double(sealed.limits.memoryBytes))
            members["salt"] = .string(Base64URL.encode(sealed.salt))
            members["nonce"] = .string(Base64URL.encode(sealed.nonce))
            members["secret"] = .string(Base64URL.encode(sealed.ciphertext))
        } else {
            members["protection"] = .string("none")
            var secret = key.rawRepresentation.exposedBytes()
            defer { wipe(&secret) }
            members["secret"] = .string(Base64URL.encode(secret))
        }
        var file = JCS.canonicalize(.object(members)) + [0x0A]
        defer { wipe(&file) }
        try SecureFile.create(file, at: home.solidarityKeyPath)
        return key
    }

    /// Loads the stored key; refuses a file others can read, one made for another identity, and
    /// a wrong passphrase.
    public func load(for identity: PublicIdentity, passphrases: PassphraseSource) throws(MeishiFailure) -> P256.SigningKey {
        let json = try read()
        guard case .string(let did)? = json["did"], case .string(let owner)? = json["identity"],
              case .string(let secretText)? = json["secret"], let secretBytes = Base64URL.decode(secretText) else { throw damaged() }
        guard owner == identity.did else {
            throw MeishiFailure("\(home.solidarityKeyPath) belongs to another identity (\(owner))",
                                hint: "move it away; a new Solidarity key is made on next use", status: .dataError)
        }
        let secret: SecureBytes
        switch json["protection"] {
        case .string("none")?:
            secret = SecureBytes(copying: secretBytes)
        case .string("argon2id-xchacha20poly1305")?:
            guard case .number(let ops)? = json["opslimit"], case .number(let mem)? = json["memlimit"],
                  case .string(let saltText)? = json["salt"], let salt = Base64URL.decode(saltText),
                  case .string(let nonceText)? = json["nonce"], let nonce = Base64URL.decode(nonceText),
                  ops >= 1, ops <= 64, mem >= 1, mem <= Double(1 << 31) else { throw damaged() }
            guard let passphrase = passphrases.passphrase(prompt: "passphrase for \(home.secretKeyPath): ") else {
                throw MeishiFailure("the Solidarity key is encrypted and no passphrase was given",
                                    hint: "set MEISHI_PASSPHRASE or run meishi on a terminal", status: .permission)
            }
            let sealed = PassphraseProtection.Sealed(limits: .init(operations: UInt64(ops), memoryBytes: Int(mem)), salt: salt,
                                                     nonce: nonce, ciphertext: secretBytes)
            do {
                secret = try PassphraseProtection.open(sealed, passphrase: passphrase,
                                                       associatedData: associatedData(did: did, identity: owner))
            } catch .authenticationFailed {
                throw MeishiFailure("wrong passphrase for \(home.solidarityKeyPath)", status: .permission)
            } catch {
                throw MeishiFailure("cannot decrypt \(home.solidarityKeyPath): \(error)", status: .permission)
            }
        default:
            throw damaged()
        }
        guard let key = try? P256.SigningKey(rawRepresentation: secret),
              DIDKey.did(forP256: key.publicKey.compressedRepresentation) == did else { throw damaged() }
        return key
    }

    private func read() throws(MeishiFailure) -> JSONValue {
        let path = home.solidarityKeyPath
        guard let mode = SecureFile.mode(of: path) else {
            throw MeishiFailure("no Solidarity key in \(home.path)", status: .noInput)
        }
        guard mode & 0o077 == 0 else {
            throw MeishiFailure("secret key \(path) is accessible by others (mode \(String(mode, radix: 8)))",
                                hint: "chmod 600 \(path)", status: .permission)
        }
        let bytes = try SecureFile.read(path, limit: 4096)
        guard let json = try? StrictJSONParser.parse(bytes), json["format"] == .string(Self.format) else { throw damaged() }
        return json
    }

    /// Binds the sealed key to its own DID and to the identity it belongs to.
    private func associatedData(did: String, identity: String) -> [UInt8] {
        Array(Self.format.utf8) + [0] + Array(did.utf8) + [0] + Array(identity.utf8)
    }

    private func damaged() -> MeishiFailure {
        MeishiFailure("\(home.solidarityKeyPath) is damaged or not a meishi Solidarity key", status: .dataError)
    }
}

/// A passphrase already in hand, offered to a second file so the person is asked once.
struct GivenPassphrase: PassphraseSource {
    let value: SecureBytes
    func passphrase(prompt: String) -> SecureBytes? { value }
    func newPassphrase() throws(MeishiFailure) -> SecureBytes? { value }
}
