import Foundation
import MeishiCard
import MeishiCrypto

/// The public half of an identity: what others see and what `meishi id` prints.
public struct PublicIdentity: Equatable, Sendable {
    public let did: String
    public let signPublicKey: Ed25519.PublicKey
    public let boxPublicKey: X25519.PublicKey

    /// The fingerprint people read aloud to each other: 30 digits in six groups of five,
    /// from SHA-256("meishi-fingerprint-v1" || 0x00 || Ed25519 public key) (docs/PROTOCOL.md).
    public var fingerprint: String {
        Self.fingerprint(of: signPublicKey.rawRepresentation)
    }

    public static func fingerprint(of signKey: [UInt8]) -> String {
        let digest = SHA256.hash(Array("meishi-fingerprint-v1".utf8) + [0] + signKey)
        return (0..<6).map { group in
            let chunk = digest[group * 5..<group * 5 + 5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let digits = String(chunk % 100_000)
            return String(repeating: "0", count: 5 - digits.count) + digits
        }.joined(separator: " ")
    }
}

/// A loaded identity: the Ed25519 signing key and the X25519 key for sealed messages.
public final class Identity: Sendable {
    public let signingKey: Ed25519.SigningKey
    public let boxKey: X25519.SecretKey
    public let publicIdentity: PublicIdentity

    public init(signingKey: Ed25519.SigningKey, boxKey: X25519.SecretKey) {
        self.signingKey = signingKey
        self.boxKey = boxKey
        publicIdentity = PublicIdentity(did: DIDKey.did(forEd25519: signingKey.publicKey.rawRepresentation),
                                        signPublicKey: signingKey.publicKey, boxPublicKey: boxKey.publicKey)
    }

    public var did: String { publicIdentity.did }
}

/// Where a passphrase comes from when one is needed.
public protocol PassphraseSource: Sendable {
    /// The passphrase to unlock an existing key, or nil when none can be had.
    func passphrase(prompt: String) -> SecureBytes?
    /// A new passphrase (asked twice on a terminal), or nil when none can be had.
    func newPassphrase() throws(MeishiFailure) -> SecureBytes?
}

/// Reads and writes the identity files in a home (docs/PROTOCOL.md, "Identity files").
public struct IdentityStore: Sendable {
    public static let format = "meishi-identity-v1"
    public let home: Home

    public init(home: Home) { self.home = home }

    public var exists: Bool { SecureFile.exists(home.secretKeyPath) }

    /// Creates a new identity. Refuses to replace one unless `force`, which first renames the
    /// old files to `*.bak-<unix time>` and returns the backup path.
    public func create(passphrase: SecureBytes?, force: Bool, now: Date,
                       limits: PassphraseProtection.Limits = .moderate) throws(MeishiFailure) -> (Identity, backup: String?) {
        try home.ensureExists()
        var backup: String?
        if exists || SecureFile.exists(home.publicIdentityPath) {
            guard force else {
                throw MeishiFailure("an identity already exists in \(home.path)",
                                    hint: "use 'meishi init --force' to replace it (the old key is kept as a backup)",
                                    status: .failure)
            }
            let suffix = ".bak-\(Int64(now.timeIntervalSince1970))"
            // The Solidarity key belongs to the identity (it is bound to its DID): it goes with it.
            for p in [home.secretKeyPath, home.publicIdentityPath, home.solidarityKeyPath] where SecureFile.exists(p) {
                guard !SecureFile.exists(p + suffix), rename(p, p + suffix) == 0 else {
                    throw MeishiFailure("cannot back up \(p): \(String(cString: strerror(errno)))")
                }
            }
            backup = home.secretKeyPath + suffix
        }
        let identity = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
        var secret = identity.signingKey.seed.exposedBytes() + identity.boxKey.rawRepresentation.exposedBytes()
        defer { wipe(&secret) }
        var members: [String: JSONValue] = [
            "format": .string(Self.format),
            "did": .string(identity.did),
        ]
        if let passphrase {
            let sealed: PassphraseProtection.Sealed
            do {
                sealed = try PassphraseProtection.seal(SecureBytes(copying: secret), passphrase: passphrase,
                                                       associatedData: associatedData(did: identity.did), limits: limits)
            } catch {
                throw MeishiFailure("cannot encrypt the key: \(error)")
            }
            members["protection"] = .string("argon2id-xchacha20poly1305")
            members["opslimit"] = .number(Double(sealed.limits.operations))
            members["memlimit"] = .number(Double(sealed.limits.memoryBytes))
            members["salt"] = .string(Base64URL.encode(sealed.salt))
            members["nonce"] = .string(Base64URL.encode(sealed.nonce))
            members["secret"] = .string(Base64URL.encode(sealed.ciphertext))
        } else {
            members["protection"] = .string("none")
            members["secret"] = .string(Base64URL.encode(secret))
        }
        var keyFile = JCS.canonicalize(.object(members)) + [0x0A]
        defer { wipe(&keyFile) }
        try SecureFile.create(keyFile, at: home.secretKeyPath)
        let pub: [String: JSONValue] = [
            "format": .string(Self.format),
            "did": .string(identity.did),
            "signPubKey": .string(Base64URL.encode(identity.signingKey.publicKey.rawRepresentation)),
            "pubKey": .string(Base64URL.encode(identity.boxKey.publicKey.rawRepresentation)),
            "created": .number(Double(Int64(now.timeIntervalSince1970))),
        ]
        try SecureFile.write(JCS.canonicalize(.object(pub)) + [0x0A], to: home.publicIdentityPath)
        return (identity, backup)
    }

    private func associatedData(did: String) -> [UInt8] {
        Array(Self.format.utf8) + [0] + Array(did.utf8)
    }

    private func missing() -> MeishiFailure {
        MeishiFailure("no identity in \(home.path)", hint: "run 'meishi init' first (or pass --home DIR)", status: .noInput)
    }

    /// The public identity, read without touching the secret key.
    public func loadPublic() throws(MeishiFailure) -> PublicIdentity {
        guard SecureFile.exists(home.publicIdentityPath) else { throw missing() }
        let bytes = try SecureFile.read(home.publicIdentityPath, limit: 4096)
        guard let json = try? StrictJSONParser.parse(bytes),
              case .string(let did)? = json["did"],
              case .string(let spk)? = json["signPubKey"], let spkBytes = Base64URL.decode(spk),
              case .string(let pk)? = json["pubKey"], let pkBytes = Base64URL.decode(pk),
              let signKey = try? Ed25519.PublicKey(rawRepresentation: spkBytes),
              let boxKey = try? X25519.PublicKey(rawRepresentation: pkBytes),
              DIDKey.did(forEd25519: spkBytes) == did
        else {
            throw MeishiFailure("\(home.publicIdentityPath) is damaged", hint: "restore it from a backup or run 'meishi init --force'",
                                status: .dataError)
        }
        return PublicIdentity(did: did, signPublicKey: signKey, boxPublicKey: boxKey)
    }

    /// Whether the secret key is encrypted under a passphrase.
    public func isEncrypted() throws(MeishiFailure) -> Bool {
        let json = try readKeyFile()
        return json["protection"] != .string("none")
    }

    private func readKeyFile() throws(MeishiFailure) -> JSONValue {
        let path = home.secretKeyPath
        guard let mode = SecureFile.mode(of: path) else { throw missing() }
        guard mode & 0o077 == 0 else {
            throw MeishiFailure(
                "secret key \(path) is accessible by others (mode \(String(mode, radix: 8)))",
                hint: "chmod 600 \(path)", status: .permission)
        }
        let bytes = try SecureFile.read(path, limit: 4096)
        guard let json = try? StrictJSONParser.parse(bytes), json["format"] == .string(Self.format) else {
            throw damaged()
        }
        return json
    }

    private func damaged() -> MeishiFailure {
        MeishiFailure("secret key \(home.secretKeyPath) is damaged or not a meishi key", status: .dataError)
    }

    /// Loads the secret key, asking `passphrases` when it is encrypted.
    /// Refuses a key file readable by group or others, like ssh.
    public func load(passphrases: PassphraseSource) throws(MeishiFailure) -> Identity {
        let json = try readKeyFile()
        guard case .string(let did)? = json["did"], case .string(let secretText)? = json["secret"],
              let secretBytes = Base64URL.decode(secretText) else { throw damaged() }
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
                throw MeishiFailure("the secret key is encrypted and no passphrase was given",
                                    hint: "set MEISHI_PASSPHRASE or run meishi on a terminal", status: .permission)
            }
            let sealed = PassphraseProtection.Sealed(
                limits: .init(operations: UInt64(ops), memoryBytes: Int(mem)), salt: salt, nonce: nonce, ciphertext: secretBytes)
            do {
                secret = try PassphraseProtection.open(sealed, passphrase: passphrase, associatedData: associatedData(did: did))
            } catch .authenticationFailed {
                throw MeishiFailure("wrong passphrase for \(home.secretKeyPath)", status: .permission)
            } catch {
                throw MeishiFailure("cannot decrypt \(home.secretKeyPath): \(error)", status: .permission)
            }
        default:
            throw damaged()
        }
        guard secret.count == 64 else { throw damaged() }
        let bytes = secret.exposedBytes()
        guard let sign = try? Ed25519.SigningKey(seed: SecureBytes(copying: bytes[0..<32])),
              let box = try? X25519.SecretKey(rawRepresentation: SecureBytes(copying: bytes[32..<64])) else { throw damaged() }
        var copy = bytes
        wipe(&copy)
        let identity = Identity(signingKey: sign, boxKey: box)
        guard identity.did == did else { throw damaged() }
        return identity
    }
}
