import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

extension Home {
    /// My supersession statements, oldest first (docs/PROTOCOL.md §10.2): public, handed to contacts.
    public var rotationsPath: String { path + "/rotations.json" }
    /// The X25519 key of the identity before the last rotation, kept for a while (§10.2).
    public var previousBoxKeyPath: String { path + "/previous-box.key" }
}

/// What `meishi id rotate` did.
public struct Rotated: Sendable {
    public let statement: RotationStatement
    public let identity: Identity
    /// When `previous-box.key` is deleted (the first command that reads it after this time).
    public let oldBoxKeyUntil: Int64
}

/// The identity before the last rotation as far as it is kept: its DID and X25519 key, enough to
/// reach a contact that knows only them (the notes channel's pair keys and Noise KK).
public struct PreviousBoxKey: Sendable {
    public let did: String
    public let boxKey: X25519.SecretKey
    public let until: Int64
}

extension IdentityStore {
    public static let previousBoxFormat = "meishi-previous-box-v1"
    /// How long the old X25519 key is kept after a rotation: contacts not reached by then learn
    /// of the rotation at the next exchange (which needs no old key).
    public static let previousBoxKeySeconds: Int64 = 30 * 86400

    /// Replaces the identity's keys: a new Ed25519 and X25519 key, a statement signed by the old
    /// Ed25519 key and the new one, appended to `rotations.json`; the old X25519 key sealed into
    /// `previous-box.key` (under the same passphrase) for `previousBoxKeySeconds`; the old
    /// Ed25519 key is not written anywhere (the statement was its last use) and the old
    /// `identity.key` is replaced by a rename. The Solidarity key, bound to the old DID, is
    /// deleted (a new one is made on next use). The caller holds the home lock.
    public func rotate(passphrases: PassphraseSource, now: Int64,
                       limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> Rotated {
        let (old, passphrase) = try loadRemembering(passphrases: passphrases)
        let chain = try myRotations()
        if let last = chain.last, last.time >= now { throw .rotatedThisSecond }
        let new = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
        let statement = RotationStatement.sign(old: old.signingKey, new: new.signingKey, time: now)
        let until = now + Self.previousBoxKeySeconds
        // The old box key and the statement first: a kill before the identity's rename leaves
        // the old identity in place with a statement for a key never installed (ignored: the
        // chain is cut to end at the current DID when it is read).
        var prev: [String: JSONValue] = ["format": .string(Self.previousBoxFormat), "did": .string(old.did),
                                         "until": .number(Double(until))]
        try KeyFile.addSecret(SecureBytes(concatenating: [old.boxKey.rawRepresentation]), to: &prev, passphrase: passphrase,
                              associatedData: Array(Self.previousBoxFormat.utf8) + [0] + Array(old.did.utf8), limits: limits)
        try KeyFile.replace(&prev, at: home.previousBoxKeyPath)
        try SecureFile.write((chain + [statement]).flatMap(\.bytes), to: home.rotationsPath)
        var members: [String: JSONValue] = ["format": .string(Self.format), "did": .string(new.did)]
        try KeyFile.addSecret(SecureBytes(concatenating: [new.signingKey.seed, new.boxKey.rawRepresentation]), to: &members,
                              passphrase: passphrase, associatedData: associatedData(did: new.did), limits: limits)
        try KeyFile.replace(&members, at: home.secretKeyPath)
        let pub: [String: JSONValue] = [
            "format": .string(Self.format), "did": .string(new.did),
            "signPubKey": .string(Base64URL.encode(new.signingKey.publicKey.rawRepresentation)),
            "pubKey": .string(Base64URL.encode(new.boxKey.publicKey.rawRepresentation)),
            "created": .number(Double(now)),
        ]
        try SecureFile.write(JCS.canonicalize(.object(pub)) + [0x0A], to: home.publicIdentityPath)
        if SecureFile.exists(home.solidarityKeyPath) { Self.erase(home.solidarityKeyPath) }
        return Rotated(statement: statement, identity: new, oldBoxKeyUntil: until)
    }

    /// My statements, oldest first, ending at the current DID (empty when it was never rotated).
    public func myRotations() throws(MeishiError) -> [RotationStatement] {
        guard SecureFile.exists(home.rotationsPath) else { return [] }
        let bytes = try SecureFile.read(home.rotationsPath, limit: 16 * RotationStatement.maximumEncodedSize)
        guard let chain = try? RotationStatement.verifyChain(bytes) else { throw .rotationsDamaged(path: home.rotationsPath) }
        guard let current = try? loadPublic().did, let end = chain.lastIndex(where: { $0.newDID == current }) else { return [] }
        return Array(chain[...end])
    }

    /// The old X25519 key while it is kept (nil when there is none); past its time the file is
    /// overwritten and deleted here. `passphrases` opens it as it opens identity.key.
    public func previousBoxKey(passphrases: PassphraseSource, now: Int64) throws(MeishiError) -> PreviousBoxKey? {
        guard SecureFile.exists(home.previousBoxKeyPath) else { return nil }
        var file = try KeyFile.read(home.previousBoxKeyPath, missing: .noIdentity(home: home.path))
        defer { wipe(&file) }
        let damaged = MeishiError.identityDamaged(path: home.previousBoxKeyPath)
        guard var json = try? StrictJSONParser.parse(file), json["format"] == .string(Self.previousBoxFormat),
              case .string(let did)? = json["did"], case .number(let until)? = json["until"] else { throw damaged }
        if Int64(until) <= now {
            forgetPreviousBoxKey()
            return nil
        }
        let secret = try KeyFile.openSecret(&json, path: home.previousBoxKeyPath, passphrases: passphrases,
                                            associatedData: Array(Self.previousBoxFormat.utf8) + [0] + Array(did.utf8), damaged: damaged)
        guard let key = try? X25519.SecretKey(rawRepresentation: secret.subrange(0..<secret.count)) else { throw damaged }
        return PreviousBoxKey(did: did, boxKey: key, until: Int64(until))
    }

    /// Overwrites and deletes `previous-box.key` (`id rotate --forget-old-key`, or its time is up).
    @discardableResult
    public func forgetPreviousBoxKey() -> Bool {
        guard SecureFile.exists(home.previousBoxKeyPath) else { return false }
        Self.erase(home.previousBoxKeyPath)
        return true
    }

    /// Overwrites a small file with zeros, then unlinks it (what a copy-on-write or journalling
    /// file system keeps of the old blocks is beyond this; docs/SECURITY.md says so).
    static func erase(_ path: String) {
        let fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 {
            var st = stat()
            if fstat(fd, &st) == 0, st.st_size > 0, st.st_size <= 65536 {
                let zeros = [UInt8](repeating: 0, count: Int(st.st_size))
                _ = zeros.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                fsync(fd)
            }
            close(fd)
        }
        unlink(path)
    }
}
