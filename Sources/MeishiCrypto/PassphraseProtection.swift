internal import CSodium

/// XChaCha20-Poly1305 (IETF) authenticated encryption.
public enum XChaCha20Poly1305 {
    public static let keyByteCount = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Ciphertext || tag of `plaintext` under `key` and `nonce`, authenticating `associatedData`.
    public static func seal(_ plaintext: UnsafeRawBufferPointer, key: SecureBytes, nonce: [UInt8],
                            associatedData: [UInt8]) -> [UInt8] {
        precondition(key.count == keyByteCount && nonce.count == nonceByteCount)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_encrypt(
                &out, &outLen, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                associatedData, UInt64(associatedData.count), nil, nonce,
                k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(rc == 0 && Int(outLen) == out.count, "crypto_aead_xchacha20poly1305_ietf_encrypt failed")
        return out
    }

    /// The plaintext, in guarded memory, or `.authenticationFailed`.
    public static func open(_ ciphertext: [UInt8], key: SecureBytes, nonce: [UInt8],
                            associatedData: [UInt8]) throws(CryptoError) -> SecureBytes {
        precondition(key.count == keyByteCount)
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(what: "nonce", expected: nonceByteCount, actual: nonce.count)
        }
        guard ciphertext.count >= tagByteCount else { throw .authenticationFailed }
        var ok = false
        let plain = SecureBytes(count: ciphertext.count - tagByteCount) { p in
            var len: UInt64 = 0
            key.withUnsafeBytes { k in
                ok = crypto_aead_xchacha20poly1305_ietf_decrypt(
                    p.baseAddress?.assumingMemoryBound(to: UInt8.self), &len, nil, ciphertext, UInt64(ciphertext.count),
                    associatedData, UInt64(associatedData.count), nonce,
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
        guard ok else { throw .authenticationFailed }
        return plain
    }
}

/// Secrets encrypted at rest under a passphrase: Argon2id (`crypto_pwhash`) derives a key,
/// XChaCha20-Poly1305 encrypts.
public enum PassphraseProtection {
    /// Argon2id cost parameters.
    public struct Limits: Equatable, Sendable {
        public var operations: UInt64
        public var memoryBytes: Int
        public init(operations: UInt64, memoryBytes: Int) {
            self.operations = operations
            self.memoryBytes = memoryBytes
        }
        /// libsodium's "moderate" limits (3 passes, 256 MiB): what meishi uses for identity keys.
        public static var moderate: Limits {
            Sodium.ensureReady()
            return Limits(operations: UInt64(crypto_pwhash_opslimit_moderate()),
                          memoryBytes: Int(crypto_pwhash_memlimit_moderate()))
        }
        /// libsodium's "interactive" limits (2 passes, 64 MiB).
        public static var interactive: Limits {
            Sodium.ensureReady()
            return Limits(operations: UInt64(crypto_pwhash_opslimit_interactive()),
                          memoryBytes: Int(crypto_pwhash_memlimit_interactive()))
        }
        /// Limits a stored file may ask for; larger ones are refused rather than run
        /// (docs/PROTOCOL.md, "Identity files": at most 16 passes and 1 GiB).
        public static let maximum = Limits(operations: 16, memoryBytes: 1 << 30)

        /// Whether a stored file's limits are within `maximum` and libsodium's minimums.
        public var isAcceptable: Bool {
            Sodium.ensureReady()
            return operations >= UInt64(crypto_pwhash_opslimit_min()) && operations <= Self.maximum.operations
                && memoryBytes >= Int(crypto_pwhash_memlimit_min()) && memoryBytes <= Self.maximum.memoryBytes
        }
    }

    /// Everything needed to decrypt, apart from the passphrase.
    public struct Sealed: Equatable, Sendable {
        public var limits: Limits
        public var salt: [UInt8]
        public var nonce: [UInt8]
        public var ciphertext: [UInt8]
        public init(limits: Limits, salt: [UInt8], nonce: [UInt8], ciphertext: [UInt8]) {
            self.limits = limits
            self.salt = salt
            self.nonce = nonce
            self.ciphertext = ciphertext
        }
    }

    public static var saltByteCount: Int { Sodium.ensureReady(); return Int(crypto_pwhash_saltbytes()) }

    public static func seal(_ secret: SecureBytes, passphrase: SecureBytes, associatedData: [UInt8],
                            limits: Limits = .moderate) throws(CryptoError) -> Sealed {
        let salt = SecureRandom.bytes(saltByteCount)
        let nonce = SecureRandom.bytes(XChaCha20Poly1305.nonceByteCount)
        let key = try keyEncryptionKey(passphrase: passphrase, salt: salt, limits: limits)
        let ct = secret.withUnsafeBytes {
            XChaCha20Poly1305.seal($0, key: key, nonce: nonce, associatedData: associatedData)
        }
        return Sealed(limits: limits, salt: salt, nonce: nonce, ciphertext: ct)
    }

    /// The secret, or `.authenticationFailed` for a wrong passphrase or altered file.
    public static func open(_ sealed: Sealed, passphrase: SecureBytes, associatedData: [UInt8]) throws(CryptoError) -> SecureBytes {
        let key = try keyEncryptionKey(passphrase: passphrase, salt: sealed.salt, limits: sealed.limits)
        return try open(sealed, key: key, associatedData: associatedData)
    }

    /// The secret under a key-encryption key `keyEncryptionKey` made for this sealed value's salt
    /// and limits (kept from an earlier unlock), or `.authenticationFailed`.
    public static func open(_ sealed: Sealed, key: SecureBytes, associatedData: [UInt8]) throws(CryptoError) -> SecureBytes {
        guard key.count == XChaCha20Poly1305.keyByteCount else {
            throw .invalidLength(what: "key", expected: XChaCha20Poly1305.keyByteCount, actual: key.count)
        }
        return try XChaCha20Poly1305.open(sealed.ciphertext, key: key, nonce: sealed.nonce, associatedData: associatedData)
    }

    /// The key Argon2id derives from `passphrase` for `salt` and `limits`: what opens a sealed
    /// value, and what the passphrase agent keeps instead of the passphrase.
    public static func keyEncryptionKey(passphrase: SecureBytes, salt: [UInt8], limits: Limits) throws(CryptoError) -> SecureBytes {
        Sodium.ensureReady()
        guard salt.count == saltByteCount else {
            throw .invalidLength(what: "salt", expected: saltByteCount, actual: salt.count)
        }
        guard limits.isAcceptable else { throw .keyDerivationFailed }
        var failed = false
        let key = SecureBytes(count: XChaCha20Poly1305.keyByteCount) { k in
            passphrase.withUnsafeBytes { pw in
                failed = crypto_pwhash(
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(k.count),
                    pw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(pw.count),
                    salt, limits.operations, limits.memoryBytes, crypto_pwhash_alg_argon2id13()) != 0
            }
        }
        if failed { throw .keyDerivationFailed }
        return key
    }
}
