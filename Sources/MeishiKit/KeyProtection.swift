import Foundation
import MeishiCard
import MeishiCrypto

/// Changing how the identity's key files are protected, and the encrypted backup of an identity
/// (docs/PROTOCOL.md, "Identity files"). Every key file is rewritten through a temporary file
/// renamed over it (mode 0600), so a key is the old one or the new one, never half written.
extension IdentityStore {
    public static let backupFormat = "meishi-identity-backup-v1"

    /// A source that remembers the passphrase that opened the key, to open `solidarity.key` (sealed
    /// under the same one) without asking again.
    private final class Remembering: PassphraseSource, @unchecked Sendable {
        let inner: PassphraseSource
        var last: SecureBytes?
        init(_ inner: PassphraseSource) { self.inner = inner }
        var tries: Int { inner.tries }
        func passphrase(forKeyAt path: String) -> SecureBytes? { passphrase(forKeyAt: path, attempt: 1) }
        func passphrase(forKeyAt path: String, attempt: Int) -> SecureBytes? {
            last = inner.passphrase(forKeyAt: path, attempt: attempt)
            return last
        }
        func newPassphrase() throws(MeishiError) -> SecureBytes? { try inner.newPassphrase() }
    }

    /// The identity and the passphrase that opened it (nil for a key in the clear).
    public func loadRemembering(passphrases: PassphraseSource) throws(MeishiError) -> (Identity, passphrase: SecureBytes?) {
        let remembering = Remembering(passphrases)
        let identity = try load(passphrases: remembering)
        return (identity, try isEncrypted() ? remembering.last : nil)
    }

    /// Seals `identity.key`, and `solidarity.key` when there is one, under `newPassphrase`, or
    /// stores them in the clear for nil. `passphrases` opens them as they are.
    public func reprotect(passphrases: PassphraseSource, newPassphrase: SecureBytes?,
                          limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) {
        let (identity, current) = try loadRemembering(passphrases: passphrases)
        // Both files are sealed first (each Argon2id run takes about a second) and only then
        // replaced, one rename after the other: a process killed before the renames leaves both
        // under the old passphrase, and the window in which one is old and one new is two
        // system calls long (docs/SECURITY.md "Keys at rest").
        var solidarityMembers: [String: JSONValue]?
        if SecureFile.exists(home.solidarityKeyPath) {
            solidarityMembers = try SolidarityKeyStore(home: home).resealed(for: identity.publicIdentity, opening: current,
                                                                           newPassphrase: newPassphrase, limits: limits)
        }
        var members: [String: JSONValue] = ["format": .string(Self.format), "did": .string(identity.did)]
        try KeyFile.addSecret(secret(of: identity), to: &members, passphrase: newPassphrase,
                              associatedData: associatedData(did: identity.did), limits: limits)
        if var solidarity = solidarityMembers { try KeyFile.replace(&solidarity, at: home.solidarityKeyPath) }
        try KeyFile.replace(&members, at: home.secretKeyPath)
    }

    private func secret(of identity: Identity) -> SecureBytes {
        SecureBytes(concatenating: [identity.signingKey.seed, identity.boxKey.rawRepresentation])
    }

    /// An encrypted backup of the identity (always sealed under `backupPassphrase`), for
    /// `meishi init --restore`: the public members of identity.json and the sealed secret.
    public func backup(passphrases: PassphraseSource, backupPassphrase: SecureBytes, now: Int64,
                       limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> [UInt8] {
        let identity = try load(passphrases: passphrases)
        let pub = identity.publicIdentity
        var members: [String: JSONValue] = [
            "format": .string(Self.backupFormat), "did": .string(pub.did),
            "signPubKey": .string(Base64URL.encode(pub.signPublicKey.rawRepresentation)),
            "pubKey": .string(Base64URL.encode(pub.boxPublicKey.rawRepresentation)),
            "exported": .number(Double(now)),
        ]
        try KeyFile.addSecret(secret(of: identity), to: &members, passphrase: backupPassphrase,
                              associatedData: Array(Self.backupFormat.utf8) + [0] + Array(pub.did.utf8), limits: limits)
        var file = JCS.canonicalize(.object(members)) + [0x0A]
        defer { wipe(&file) }
        return file
    }

    /// Writes a backup made by `backup` to `path` (mode 0600): created exclusively, so an existing
    /// file, or a link, is never touched unless `replacing`; even then only a regular file outside
    /// this home's own files is replaced (atomically, never written through a link).
    public func writeBackup(_ bytes: [UInt8], to path: String, replacing: Bool) throws(MeishiError) {
        guard replacing else { return try SecureFile.create(bytes, at: path) }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFREG else { throw .cannotWrite(path: path, reason: "it is not a regular file") }
        }
        try SecureFile.writeOutput(bytes, to: path, mode: 0o600, home: home)
    }

    /// Restores an identity from `backup` (asking `passphrases` for the backup's passphrase); the
    /// restored identity.key is sealed under that same passphrase. `force` as for `create`; when
    /// the home held another identity, its card and store are set aside with its keys: they are
    /// that person's, not the restored one's.
    public func restore(_ backup: [UInt8], path: String, passphrases: PassphraseSource, force: Bool, now: Int64,
                        limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> Installed {
        if !force { try refuseExisting() }
        let damaged = MeishiError.identityDamaged(path: path)
        guard var json = try? StrictJSONParser.parse(backup), json["format"] == .string(Self.backupFormat) else {
            throw .notABackup(path: path)
        }
        guard case .string(let did)? = json["did"], KeyFile.isEncrypted(json) else { throw damaged }
        let remembering = Remembering(passphrases)
        let secret = try KeyFile.openSecret(&json, path: path, passphrases: remembering,
                                            associatedData: Array(Self.backupFormat.utf8) + [0] + Array(did.utf8), damaged: damaged)
        let seedCount = Ed25519.SigningKey.seedByteCount
        guard secret.count == Self.secretByteCount,
              let sign = try? Ed25519.SigningKey(seed: secret.subrange(0..<seedCount)),
              let box = try? X25519.SecretKey(rawRepresentation: secret.subrange(seedCount..<Self.secretByteCount)) else { throw damaged }
        let identity = Identity(signingKey: sign, boxKey: box)
        guard identity.did == did else { throw damaged }
        let anotherPerson = exists && (try? loadPublic())?.did != did
        // A backup sealed under an empty passphrase protects nothing: the key is stored in the clear.
        let passphrase = remembering.last.flatMap { $0.count == 0 ? nil : $0 }
        var installed = try install(identity, passphrase: passphrase, force: force, now: now, setAsideHomeData: anotherPerson,
                                    limits: limits)
        reclaimSetAside(for: did, into: &installed)
        return installed
    }
}

extension SolidarityKeyStore {
    /// solidarity.key's members sealed under `newPassphrase` (nil: in the clear), for the caller
    /// to write; `current` opens the file as it is.
    func resealed(for identity: PublicIdentity, opening current: SecureBytes?, newPassphrase: SecureBytes?,
                  limits: PassphraseProtection.Limits) throws(MeishiError) -> [String: JSONValue] {
        let key = try load(for: identity, passphrases: GivenPassphrase(value: current ?? SecureBytes(copying: [])))
        let did = DIDKey.did(for: key.publicKey)
        var members: [String: JSONValue] = [
            "format": .string(Self.format), "did": .string(did), "identity": .string(identity.did),
        ]
        try KeyFile.addSecret(key.rawRepresentation, to: &members, passphrase: newPassphrase,
                              associatedData: associatedData(did: did, identity: identity.did), limits: limits)
        return members
    }
}
