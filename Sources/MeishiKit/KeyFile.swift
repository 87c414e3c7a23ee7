import Foundation
import MeishiCard
import MeishiCrypto

/// The secret part of meishi's key files (`identity.key`, `solidarity.key`; docs/PROTOCOL.md,
/// "Identity files"): `protection` "none" with the secret in base64url, or
/// "argon2id-xchacha20poly1305" with `opslimit`, `memlimit`, `salt`, `nonce` and the sealed secret.
/// One definition for both files, so they are written, read and refused alike.
enum KeyFile {
    /// Largest key file read, in bytes.
    static let maximumBytes = 4096

    /// Adds the protection members and `secret` to `members`: sealed under `passphrase` (bound to
    /// `associatedData`) when one is given, else in the clear. `create` wipes the text.
    static func addSecret(_ secret: SecureBytes, to members: inout [String: JSONValue], passphrase: SecureBytes?,
                          associatedData: [UInt8], limits: PassphraseProtection.Limits) throws(MeishiError) {
        let secretText: String
        if let passphrase {
            let sealed: PassphraseProtection.Sealed
            do {
                sealed = try PassphraseProtection.seal(secret, passphrase: passphrase, associatedData: associatedData, limits: limits)
            } catch {
                throw .cannotEncrypt(error)
            }
            members["protection"] = .string("argon2id-xchacha20poly1305")
            members["opslimit"] = .number(Double(sealed.limits.operations))
            members["memlimit"] = .number(Double(sealed.limits.memoryBytes))
            members["salt"] = .string(Base64URL.encode(sealed.salt))
            members["nonce"] = .string(Base64URL.encode(sealed.nonce))
            secretText = Base64URL.encode(sealed.ciphertext)
        } else {
            members["protection"] = .string("none")
            secretText = secret.withUnsafeBytes { Base64URL.encode($0) }
        }
        members["secret"] = .string(secretText)
    }

    /// Writes `members` as a JCS key file at `path`, created exclusive with mode 0600, then wipes
    /// the file's bytes and the `secret` text (its storage is shared with every copy, so only now).
    static func create(_ members: inout [String: JSONValue], at path: String) throws(MeishiError) {
        try write(&members) { file throws(MeishiError) in try SecureFile.create(file, at: path) }
    }

    /// Writes `members` as a JCS key file over `path`: a temporary file (mode 0600) renamed over
    /// it, so the key is either the old one or the new one, never half written. Wipes like `create`.
    static func replace(_ members: inout [String: JSONValue], at path: String) throws(MeishiError) {
        try write(&members) { file throws(MeishiError) in try SecureFile.write(file, to: path, mode: 0o600) }
    }

    /// The file's bytes handed to `store`, then they and the `secret` text wiped.
    private static func write(_ members: inout [String: JSONValue],
                              _ store: ([UInt8]) throws(MeishiError) -> Void) throws(MeishiError) {
        var file = JCS.canonicalize(.object(members)) + [0x0A]
        var secretText: String?
        if case .string(let text)? = members["secret"] { secretText = text }
        members = [:]
        defer {
            wipe(&file)
            if var text = secretText { wipe(&text) }
        }
        try store(file)
    }

    /// The key file's bytes; refuses a file readable by group or others, like ssh. `missing` is
    /// thrown when there is no file.
    static func read(_ path: String, missing: MeishiError) throws(MeishiError) -> [UInt8] {
        guard let mode = SecureFile.mode(of: path) else { throw missing }
        guard mode & 0o077 == 0 else { throw .keyExposed(path: path, mode: UInt32(mode)) }
        return try SecureFile.read(path, limit: maximumBytes)
    }

    /// Whether a parsed key file is sealed under a passphrase.
    static func isEncrypted(_ json: JSONValue) -> Bool { json["protection"] != .string("none") }

    /// The secret of a parsed key file at `path`, asking `passphrases` when it is sealed. `json`
    /// is emptied, and every buffer that held the secret or its text is wiped, before this returns.
    static func openSecret(_ json: inout JSONValue, path: String, passphrases: PassphraseSource, associatedData: [UInt8],
                           damaged: MeishiError) throws(MeishiError) -> SecureBytes {
        guard case .string(var secretText)? = json["secret"] else { throw damaged }
        let protection = json["protection"]
        let limitsAndNonce = (json["opslimit"], json["memlimit"], json["salt"], json["nonce"])
        json = .null
        var secretBytes = Base64URL.decode(secretText) ?? []
        wipe(&secretText)
        defer { wipe(&secretBytes) }
        guard !secretBytes.isEmpty else { throw damaged }
        switch protection {
        case .string("none")?:
            return SecureBytes(copying: secretBytes)
        case .string("argon2id-xchacha20poly1305")?:
            guard case (.number(let ops)?, .number(let mem)?, .string(let saltText)?, .string(let nonceText)?) = limitsAndNonce,
                  let salt = Base64URL.decode(saltText), let nonce = Base64URL.decode(nonceText),
                  ops >= 1, mem >= 1, ops <= Double(UInt32.max), mem <= Double(Int64(1) << 40) else { throw damaged }
            let limits = PassphraseProtection.Limits(operations: UInt64(ops), memoryBytes: Int(mem))
            guard limits.isAcceptable else {
                throw .keyLimitsTooHigh(path: path, operations: limits.operations, memoryBytes: limits.memoryBytes)
            }
            let sealed = PassphraseProtection.Sealed(limits: limits, salt: salt, nonce: nonce, ciphertext: secretBytes)
            // A key kept from an earlier unlock in this session opens the file without a question;
            // one that no longer does (the file was sealed again) is dropped.
            let keptName = "kek:" + saltText
            if let kept = passphrases.remembered, let key = kept.key(named: keptName) {
                if let secret = try? PassphraseProtection.open(sealed, key: key, associatedData: associatedData) { return secret }
                kept.forget(named: keptName)
            }
            // A person at a terminal may mistype: `tries` passphrases, then it is wrong.
            for attempt in 1...max(1, passphrases.tries) {
                guard let passphrase = passphrases.passphrase(forKeyAt: path, attempt: attempt) else { throw .passphraseNeeded }
                do {
                    let key = try PassphraseProtection.keyEncryptionKey(passphrase: passphrase, salt: salt, limits: limits)
                    let secret = try PassphraseProtection.open(sealed, key: key, associatedData: associatedData)
                    passphrases.remembered?.remember(key, named: keptName)
                    return secret
                } catch .authenticationFailed {
                    continue
                } catch {
                    throw .cannotDecrypt(path: path, error)
                }
            }
            throw .wrongPassphrase(path: path)
        default:
            throw damaged
        }
    }
}
