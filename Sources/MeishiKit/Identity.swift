import Foundation
import MeishiCard
import MeishiCrypto

/// The public half of an identity: what others see and what `meishi id` prints.
public struct PublicIdentity: Equatable, Sendable {
    public let did: String
    public let signPublicKey: Ed25519.PublicKey
    public let boxPublicKey: X25519.PublicKey

    /// The fingerprint people read aloud to each other (docs/PROTOCOL.md).
    public var fingerprint: String { signPublicKey.fingerprint }
}

/// A loaded identity: the Ed25519 signing key and the X25519 key for sealed messages.
public final class Identity: Sendable {
    public let signingKey: Ed25519.SigningKey
    public let boxKey: X25519.SecretKey
    public let publicIdentity: PublicIdentity

    public init(signingKey: Ed25519.SigningKey, boxKey: X25519.SecretKey) {
        self.signingKey = signingKey
        self.boxKey = boxKey
        publicIdentity = PublicIdentity(did: DIDKey.did(for: signingKey.publicKey),
                                        signPublicKey: signingKey.publicKey, boxPublicKey: boxKey.publicKey)
    }

    public var did: String { publicIdentity.did }
}

/// Where a passphrase comes from when one is needed (the environment or a terminal: the front
/// end decides).
public protocol PassphraseSource: Sendable {
    /// The passphrase to unlock the key at `path`, or nil when none can be had.
    func passphrase(forKeyAt path: String) -> SecureBytes?
    /// A new passphrase (asked twice on a terminal), or nil when none can be had.
    func newPassphrase() throws(MeishiError) -> SecureBytes?
    /// How many passphrases may be tried on one key (a person at a terminal gets three).
    var tries: Int { get }
    /// The passphrase for try `attempt` (1, 2, …): after a wrong one, the front end may say so.
    func passphrase(forKeyAt path: String, attempt: Int) -> SecureBytes?
    /// Where the key-encryption keys of earlier unlocks are kept and found (the passphrase agent),
    /// or nil: every unlock asks.
    var remembered: (any RememberedKeys)? { get }
}

extension PassphraseSource {
    public var tries: Int { 1 }
    public var remembered: (any RememberedKeys)? { nil }
    public func passphrase(forKeyAt path: String, attempt: Int) -> SecureBytes? { passphrase(forKeyAt: path) }
}

/// Reads and writes the identity files in a home (docs/PROTOCOL.md, "Identity files").
public struct IdentityStore: Sendable {
    public static let format = "meishi-identity-v1"
    /// Bytes of the secret: the Ed25519 seed then the X25519 secret key.
    static let secretByteCount = Ed25519.SigningKey.seedByteCount + X25519.SecretKey.byteCount
    public let home: Home

    public init(home: Home) { self.home = home }

    /// Whether the home holds an identity (either of its files).
    public var exists: Bool { SecureFile.exists(home.secretKeyPath) || SecureFile.exists(home.publicIdentityPath) }

    /// Refuses when an identity exists: `init` checks this before it asks for a passphrase.
    public func refuseExisting() throws(MeishiError) {
        if exists { throw .identityExists(home: home.path) }
    }

    /// Creates a new identity. Refuses to replace one unless `force`, which first renames the
    /// old files to `*.bak-<unix time>` and returns the backup path.
    public func create(passphrase: SecureBytes?, force: Bool, now: Int64,
                       limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> (Identity, backup: String?) {
        let installed = try install(Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey()), passphrase: passphrase,
                                    force: force, now: now, limits: limits)
        return (installed.identity, installed.backup)
    }

    /// What `create` and `restore` wrote, and what they moved aside.
    public struct Installed: Sendable {
        public let identity: Identity
        /// The previous identity.key, renamed, when one was replaced.
        public let backup: String?
        /// The previous person's card and store, renamed (restoring another identity's backup).
        public var setAside: [String]
        /// This identity's own card and store, set aside by an earlier restore of someone else's
        /// backup, renamed back (the home held none).
        public var broughtBack: [String] = []
        /// The same, left where they are because the home has a card or store already.
        public var keptAsideForIt: [String] = []
    }

    /// Writes `identity`'s files (a new one, or one restored from a backup), like `create`. With
    /// `setAsideHomeData`, the card and store are renamed with the key files (data first, so a
    /// kill part-way never leaves the new identity beside the old person's contacts).
    func install(_ identity: Identity, passphrase: SecureBytes?, force: Bool, now: Int64, setAsideHomeData: Bool = false,
                 limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> Installed {
        try home.ensureExists()
        var backup: String?
        var setAside: [String] = []
        if exists {
            guard force else { throw .identityExists(home: home.path) }
            // SQLite finds a database's journal by its name: the WAL and shared-memory files
            // follow the database to `<db>.bak-<time>-wal`, so the kept copy opens whole.
            let db = home.databasePath
            func dataMoves(_ suffix: String) -> [(String, String)] {
                setAsideHomeData ? [(home.cardPath, home.cardPath + suffix), (db + "-wal", db + suffix + "-wal"),
                                    (db + "-shm", db + suffix + "-shm"), (db, db + suffix)] : []
            }
            let keys = [home.secretKeyPath, home.publicIdentityPath, home.solidarityKeyPath]
            // A second replacement in the same second gets `.bak-<time>-2`, and so on.
            var suffix = ".bak-\(now)"
            for n in 2...99 {
                let taken = keys.contains { SecureFile.exists($0 + suffix) } || dataMoves(suffix).contains { SecureFile.exists($0.1) }
                if !taken { break }
                suffix = ".bak-\(now)-\(n)"
            }
            for (from, to) in dataMoves(suffix) where SecureFile.exists(from) {
                if SecureFile.exists(to) { throw .cannotBackUp(path: from, reason: "\(to) already exists") }
                guard rename(from, to) == 0 else { throw .cannotBackUp(path: from, reason: SecureFile.lastError()) }
                if !to.hasSuffix("-wal") && !to.hasSuffix("-shm") { setAside.append(to) }
            }
            // The Solidarity key belongs to the identity (it is bound to its DID): it goes with it.
            for p in keys where SecureFile.exists(p) {
                if SecureFile.exists(p + suffix) { throw .cannotBackUp(path: p, reason: "\(p + suffix) already exists") }
                guard rename(p, p + suffix) == 0 else { throw .cannotBackUp(path: p, reason: SecureFile.lastError()) }
            }
            backup = home.secretKeyPath + suffix
        }
        let secret = SecureBytes(concatenating: [identity.signingKey.seed, identity.boxKey.rawRepresentation])
        var members: [String: JSONValue] = [
            "format": .string(Self.format),
            "did": .string(identity.did),
        ]
        try KeyFile.addSecret(secret, to: &members, passphrase: passphrase, associatedData: associatedData(did: identity.did),
                              limits: limits)
        try KeyFile.create(&members, at: home.secretKeyPath)
        let pub: [String: JSONValue] = [
            "format": .string(Self.format),
            "did": .string(identity.did),
            "signPubKey": .string(Base64URL.encode(identity.signingKey.publicKey.rawRepresentation)),
            "pubKey": .string(Base64URL.encode(identity.boxKey.publicKey.rawRepresentation)),
            "created": .number(Double(now)),
        ]
        try SecureFile.write(JCS.canonicalize(.object(pub)) + [0x0A], to: home.publicIdentityPath)
        return Installed(identity: identity, backup: backup, setAside: setAside)
    }

    /// After restoring `did`: its card and store from before, if an earlier replacement set them
    /// aside (`identity.json.bak-S` naming it beside `card.json.bak-S` or `meishi.sqlite.bak-S`,
    /// the newest such S), are renamed back when the home holds neither; otherwise named.
    func reclaimSetAside(for did: String, into installed: inout Installed) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: home.path) else { return }
        let prefix = "identity.json.bak-"
        let suffixes = names.filter { $0.hasPrefix(prefix) }.compactMap { name -> (String, Int64, Int)? in
            let tail = name.dropFirst(prefix.count).split(separator: "-")
            guard let time = tail.first.flatMap({ Int64($0) }), tail.count <= 2 else { return nil }
            guard let bytes = try? SecureFile.read(home.path + "/" + name, limit: 4096), bytes.count <= 4096,
                  let json = try? StrictJSONParser.parse(bytes), json["did"] == .string(did) else { return nil }
            return (String(name.dropFirst("identity.json".count)), time, tail.count == 2 ? Int(tail[1]) ?? 0 : 1)
        }
        guard let newest = suffixes.max(by: { ($0.1, $0.2) < ($1.1, $1.2) })?.0 else { return }
        let db = home.databasePath
        let kept = [home.cardPath + newest, db + newest].filter { SecureFile.exists($0) }
        guard !kept.isEmpty else { return }
        let occupied = [home.cardPath, db, db + "-wal"].contains { SecureFile.exists($0) }
        guard !occupied else {
            installed.keptAsideForIt = kept
            return
        }
        for (from, to) in [(home.cardPath + newest, home.cardPath), (db + newest + "-wal", db + "-wal"), (db + newest + "-shm", db + "-shm"),
                           (db + newest, db)] where SecureFile.exists(from) {
            if rename(from, to) == 0, !from.hasSuffix("-wal"), !from.hasSuffix("-shm") { installed.broughtBack.append(from) }
        }
    }

    func associatedData(did: String) -> [UInt8] {
        Array(Self.format.utf8) + [0] + Array(did.utf8)
    }

    /// The public identity, read without touching the secret key.
    public func loadPublic() throws(MeishiError) -> PublicIdentity {
        guard SecureFile.exists(home.publicIdentityPath) else { throw .noIdentity(home: home.path) }
        let bytes = try SecureFile.read(home.publicIdentityPath, limit: 4096)
        guard let json = try? StrictJSONParser.parse(bytes),
              case .string(let did)? = json["did"],
              case .string(let spk)? = json["signPubKey"], let spkBytes = Base64URL.decode(spk),
              case .string(let pk)? = json["pubKey"], let pkBytes = Base64URL.decode(pk),
              let signKey = try? Ed25519.PublicKey(rawRepresentation: spkBytes),
              let boxKey = try? X25519.PublicKey(rawRepresentation: pkBytes),
              DIDKey.did(for: signKey) == did
        else { throw .identityDamaged(path: home.publicIdentityPath) }
        return PublicIdentity(did: did, signPublicKey: signKey, boxPublicKey: boxKey)
    }

    /// Whether the secret key is encrypted under a passphrase.
    public func isEncrypted() throws(MeishiError) -> Bool {
        var bytes = try readKeyFile()
        defer { wipe(&bytes) }
        guard let json = try? StrictJSONParser.parse(bytes), json["format"] == .string(Self.format) else { throw damaged() }
        return KeyFile.isEncrypted(json)
    }

    /// The key file's bytes; refuses a file readable by group or others, like ssh.
    func readKeyFile() throws(MeishiError) -> [UInt8] {
        try KeyFile.read(home.secretKeyPath, missing: .noIdentity(home: home.path))
    }

    func damaged() -> MeishiError { .identityDamaged(path: home.secretKeyPath) }

    /// Loads the secret key, asking `passphrases` when it is encrypted. Every buffer that held the
    /// secret, its base64 text or the file is wiped before this returns.
    public func load(passphrases: PassphraseSource) throws(MeishiError) -> Identity {
        var file = try readKeyFile()
        defer { wipe(&file) }
        guard var json = try? StrictJSONParser.parse(file), json["format"] == .string(Self.format),
              case .string(let did)? = json["did"] else { throw damaged() }
        let secret = try KeyFile.openSecret(&json, path: home.secretKeyPath, passphrases: passphrases,
                                            associatedData: associatedData(did: did), damaged: damaged())
        guard secret.count == Self.secretByteCount,
              let sign = try? Ed25519.SigningKey(seed: secret.subrange(0..<Ed25519.SigningKey.seedByteCount)),
              let box = try? X25519.SecretKey(rawRepresentation: secret.subrange(Ed25519.SigningKey.seedByteCount..<Self.secretByteCount))
        else { throw damaged() }
        let identity = Identity(signingKey: sign, boxKey: box)
        guard identity.did == did else { throw damaged() }
        return identity
    }
}
