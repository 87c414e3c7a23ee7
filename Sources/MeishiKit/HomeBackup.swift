import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

/// A whole home in one encrypted file (`meishi backup`, `meishi restore`; docs/PROTOCOL.md
/// 3.1.2): the key files as they are, the card, and a consistent snapshot of the store (contacts,
/// common friends and notes), sealed like an identity backup (Argon2id, XChaCha20-Poly1305).
public struct HomeBackup: Sendable {
    public static let format = "meishi-home-backup-v1"
    /// The sealed document's format.
    static let contentFormat = "meishi-home-v1"
    /// Largest backup read back, in bytes.
    public static let maximumBytes = 1 << 30
    /// The files a backup may hold, in the order a restore writes them: the identity's last.
    static let fileNames = [ContactStore.fileName, "card.json", "solidarity.key", "rotations.json", "previous-box.key", "identity.json",
                            "identity.key"]
    /// The files a backup must hold.
    static let requiredFiles: Set<String> = ["identity.json", "identity.key"]
    /// Largest card.json or key file taken into a backup.
    static let maximumSmallFileBytes = 1 << 20

    public let home: Home

    public init(home: Home) { self.home = home }

    /// What a backup holds, opened.
    public struct Contents: Sendable {
        public let did: String
        /// When the backup was made (Unix seconds).
        public let created: Int64
        /// File name to bytes, the names among `fileNames`.
        public let files: [String: [UInt8]]

        /// Whether it holds a card, a store.
        public var hasCard: Bool { files["card.json"] != nil }
        public var hasStore: Bool { files[ContactStore.fileName] != nil }
    }

    /// The home's identity, card and store (a `snapshot` of `store`) sealed under `passphrase`:
    /// the file `meishi backup` writes.
    public func make(store: ContactStore, passphrase: SecureBytes, now: Int64,
                     limits: PassphraseProtection.Limits = .moderate) throws(MeishiError) -> [UInt8] {
        let did = try IdentityStore(home: home).loadPublic().did
        var files: [String: JSONValue] = [:]
        for (name, path) in [("identity.key", home.secretKeyPath), ("identity.json", home.publicIdentityPath),
                             ("card.json", home.cardPath), ("solidarity.key", home.solidarityKeyPath),
                             // After `id rotate`: my statements, and the old X25519 key while it is kept.
                             ("rotations.json", home.rotationsPath), ("previous-box.key", home.previousBoxKeyPath)] where SecureFile.exists(path) {
            var bytes = try SecureFile.read(path, limit: Self.maximumSmallFileBytes)
            defer { wipe(&bytes) }
            guard bytes.count <= Self.maximumSmallFileBytes else { throw .fileTooLarge(path: path, limit: Self.maximumSmallFileBytes) }
            files[name] = .string(Base64URL.encode(bytes))
        }
        var snapshot = try takeSnapshot(of: store)
        defer { wipe(&snapshot) }
        files[ContactStore.fileName] = .string(Base64URL.encode(snapshot))
        let document = JSONValue.object(["format": .string(Self.contentFormat), "did": .string(did),
                                         "created": .number(Double(now)), "files": .object(files)])
        var plain = JCS.canonicalize(document)
        defer { wipe(&plain) }
        let sealed: PassphraseProtection.Sealed
        do {
            sealed = try PassphraseProtection.seal(SecureBytes(copying: plain), passphrase: passphrase,
                                                   associatedData: Self.associatedData(did: did), limits: limits)
        } catch {
            throw .cannotEncrypt(error)
        }
        let header = JSONValue.object([
            "format": .string(Self.format), "did": .string(did), "exported": .number(Double(now)),
            "protection": .string("argon2id-xchacha20poly1305"),
            "opslimit": .number(Double(sealed.limits.operations)), "memlimit": .number(Double(sealed.limits.memoryBytes)),
            "salt": .string(Base64URL.encode(sealed.salt)), "nonce": .string(Base64URL.encode(sealed.nonce)),
        ])
        return JCS.canonicalize(header) + [0x0A] + sealed.ciphertext
    }

    /// A `VACUUM INTO` copy of `store`, read back; the copy (mode 0600, in the home) is removed.
    private func takeSnapshot(of store: ContactStore) throws(MeishiError) -> [UInt8] {
        let path = home.path + "/.backup-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite"
        // Created empty first, so SQLite writes it with mode 0600 (VACUUM INTO takes an empty file).
        let fd = Glibc.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotWrite(path: path, reason: String(cString: strerror(errno))) }
        close(fd)
        defer {
            unlink(path)
            unlink(path + "-journal")
        }
        do { try store.snapshot(to: path) } catch { throw .store(error) }
        return try SecureFile.read(path, limit: Self.maximumBytes)
    }

    static func associatedData(did: String) -> [UInt8] { Array(format.utf8) + [0] + Array(did.utf8) }

    /// The header's DID and how the rest is sealed, each member checked before anything is
    /// opened: a header `backup` cannot have written is refused, saying which member is wrong
    /// (a 3-byte salt reached libsodium and was reported by an internal name).
    static func sealing(_ header: JSONValue, path: String) throws(MeishiError) -> (String, PassphraseProtection.Limits, [UInt8], [UInt8]) {
        func refuse(_ reason: String) -> MeishiError { .homeBackupHeader(path: path, reason: reason) }
        guard case .string(let did)? = header["did"], !did.isEmpty else { throw refuse("has no \"did\"") }
        guard header["protection"] == .string("argon2id-xchacha20poly1305") else {
            throw refuse("names a protection other than argon2id-xchacha20poly1305")
        }
        guard case .number(let ops)? = header["opslimit"], ops >= 1, ops == ops.rounded(),
              case .number(let mem)? = header["memlimit"], mem >= 1, mem == mem.rounded() else {
            throw refuse("has no \"opslimit\" and \"memlimit\" that are whole numbers above 0")
        }
        let maximum = PassphraseProtection.Limits.maximum
        guard ops <= Double(maximum.operations), mem <= Double(maximum.memoryBytes) else {
            throw refuse("asks Argon2id for \(UInt64(min(ops, 1e18))) passes and \(UInt64(min(mem, 1e18)) >> 20) MiB, "
                         + "over meishi's limits of \(maximum.operations) passes and \(maximum.memoryBytes >> 20) MiB")
        }
        let limits = PassphraseProtection.Limits(operations: UInt64(ops), memoryBytes: Int(mem))
        guard limits.isAcceptable else { throw refuse("asks Argon2id for less than libsodium's minimums") }
        var keys: [[UInt8]] = []
        for (name, count) in [("salt", PassphraseProtection.saltByteCount), ("nonce", XChaCha20Poly1305.nonceByteCount)] {
            guard case .string(let text)? = header[name], let raw = Base64URL.decode(text) else {
                throw refuse("has a \"\(name)\" that is not base64url")
            }
            guard raw.count == count else { throw refuse("has a \(raw.count)-byte \(name), not \(count) bytes") }
            keys.append(raw)
        }
        return (did, limits, keys[0], keys[1])
    }

    /// Opens a backup's bytes (`path` names it in errors), asking `passphrases` for its
    /// passphrase, and checks what it holds: the identity files name the DID the file does.
    public static func open(_ bytes: [UInt8], path: String, passphrases: PassphraseSource) throws(MeishiError) -> Contents {
        guard let newline = bytes.prefix(4096).firstIndex(of: 0x0A),
              let header = try? StrictJSONParser.parse(Array(bytes[..<newline])),
              header["format"] == .string(format) else { throw .notAHomeBackup(path: path) }
        let damaged = MeishiError.homeBackupDamaged(path: path)
        let (did, limits, salt, nonce) = try Self.sealing(header, path: path)
        let sealed = PassphraseProtection.Sealed(limits: limits, salt: salt, nonce: nonce, ciphertext: Array(bytes[(newline + 1)...]))
        var plain: SecureBytes?
        for attempt in 1...max(1, passphrases.tries) {
            guard let passphrase = passphrases.passphrase(forKeyAt: path, attempt: attempt) else { throw .passphraseNeeded }
            do {
                plain = try PassphraseProtection.open(sealed, passphrase: passphrase, associatedData: associatedData(did: did))
                break
            } catch .authenticationFailed {
                continue
            } catch {
                throw .cannotDecrypt(path: path, error)
            }
        }
        guard let plain else { throw .wrongPassphrase(path: path) }
        var text = plain.exposedBytes()
        defer { wipe(&text) }
        guard let document = try? StrictJSONParser.parse(text), document["format"] == .string(contentFormat),
              document["did"] == .string(did), case .number(let created)? = document["created"],
              case .object(let members)? = document["files"] else { throw damaged }
        var files: [String: [UInt8]] = [:]
        for m in members {
            guard fileNames.contains(m.key), case .string(let encoded) = m.value, let data = Base64URL.decode(encoded) else { throw damaged }
            files[m.key] = data
        }
        guard requiredFiles.isSubset(of: files.keys) else { throw damaged }
        // The identity files name the DID; a store is an SQLite database.
        for name in ["identity.json", "identity.key"] {
            guard let json = try? StrictJSONParser.parse(files[name]!), json["did"] == .string(did) else { throw damaged }
        }
        if let db = files[ContactStore.fileName], !db.starts(with: Array("SQLite format 3\0".utf8)) { throw damaged }
        return Contents(did: did, created: Int64(created), files: files)
    }

    /// Refuses a home that exists and is not an empty directory.
    public func refuseNonEmpty() throws(MeishiError) {
        guard SecureFile.exists(home.path) else { return }
        guard SecureFile.isDirectory(home.path) else { throw .homeNotDirectory(path: home.path) }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: home.path)) ?? []
        guard entries.isEmpty else { throw .homeNotEmpty(path: home.path, holds: entries.sorted()) }
    }

    /// Writes `contents` as this home, which must be empty or not exist yet: the files are written
    /// (mode 0600) into a new directory beside it, which is then renamed to the home, so a restore
    /// cut short leaves no half-restored home. Refuses a home holding anything.
    public func restore(_ contents: Contents) throws(MeishiError) {
        try refuseNonEmpty()
        let parent = (home.path as NSString).deletingLastPathComponent
        do { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) } catch {
            throw .cannotCreateHome(path: parent, reason: error.localizedDescription)
        }
        let staging = parent + "/.meishi-restore-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard mkdir(staging, 0o700) == 0 else { throw .cannotCreateHome(path: staging, reason: String(cString: strerror(errno))) }
        var moved = false
        defer {
            if !moved {
                for name in Self.fileNames { unlink(staging + "/" + name) }
                rmdir(staging)
            }
        }
        for name in Self.fileNames {
            guard let bytes = contents.files[name] else { continue }
            try SecureFile.create(bytes, at: staging + "/" + name)
        }
        // rename(2) replaces an empty directory, and fails on one that gained entries meanwhile.
        guard rename(staging, home.path) == 0 else {
            let reason = String(cString: strerror(errno))
            if errno == ENOTEMPTY || errno == EEXIST {
                throw .homeNotEmpty(path: home.path, holds: ((try? FileManager.default.contentsOfDirectory(atPath: home.path)) ?? []).sorted())
            }
            throw .cannotCreateHome(path: home.path, reason: reason)
        }
        moved = true
        let fd = Glibc.open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }
}
