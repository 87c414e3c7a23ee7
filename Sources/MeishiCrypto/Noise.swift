internal import CSodium

/// ChaCha20-Poly1305 (IETF, RFC 8439) with Noise's nonce: 32 zero bits, then a 64-bit
/// little-endian counter.
public enum ChaCha20Poly1305 {
    public static let keyByteCount = Int(crypto_aead_chacha20poly1305_ietf_KEYBYTES)
    public static let tagByteCount = Int(crypto_aead_chacha20poly1305_ietf_ABYTES)

    static func nonce(_ n: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: n >> (8 * UInt64($0))) }
    }

    /// Ciphertext || tag of `plaintext` under `key` and counter `n`, authenticating `associatedData`.
    public static func seal(_ plaintext: [UInt8], key: SecureBytes, n: UInt64, associatedData: [UInt8]) -> [UInt8] {
        Sodium.ensureReady()
        precondition(key.count == keyByteCount)
        var out = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_chacha20poly1305_ietf_encrypt(&out, &outLen, plaintext, UInt64(plaintext.count), associatedData,
                                                      UInt64(associatedData.count), nil, nonce(n),
                                                      k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        precondition(rc == 0 && Int(outLen) == out.count, "crypto_aead_chacha20poly1305_ietf_encrypt failed")
        return out
    }

    /// The plaintext, or `.authenticationFailed`.
    public static func open(_ ciphertext: [UInt8], key: SecureBytes, n: UInt64, associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        precondition(key.count == keyByteCount)
        guard ciphertext.count >= tagByteCount else { throw .authenticationFailed }
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagByteCount)
        var outLen: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_chacha20poly1305_ietf_decrypt(&out, &outLen, nil, ciphertext, UInt64(ciphertext.count), associatedData,
                                                      UInt64(associatedData.count), nonce(n),
                                                      k.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else { throw .authenticationFailed }
        return out
    }
}

/// HMAC-SHA256 (RFC 2104) through libsodium, with a key of any length.
public enum HMACSHA256 {
    public static let byteCount = 32

    /// The 32-byte tag of the concatenation of `parts` under `key`, in guarded memory.
    static func authenticationCode(for parts: [HashPart], key: SecureBytes) -> SecureBytes {
        Sodium.ensureReady()
        var state = crypto_auth_hmacsha256_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) } }
        var rc = key.withUnsafeBytes {
            crypto_auth_hmacsha256_init(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
        }
        precondition(rc == 0, "crypto_auth_hmacsha256_init failed")
        for part in parts {
            switch part {
            case .plain(let bytes):
                rc = bytes.withUnsafeBufferPointer { crypto_auth_hmacsha256_update(&state, $0.baseAddress, UInt64($0.count)) }
            case .secret(let s):
                rc = s.withUnsafeBytes {
                    crypto_auth_hmacsha256_update(&state, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64($0.count))
                }
            }
            precondition(rc == 0, "crypto_auth_hmacsha256_update failed")
        }
        return SecureBytes(count: byteCount) { out in
            rc = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            precondition(rc == 0, "crypto_auth_hmacsha256_final failed")
        }
    }
}

/// The Noise handshake `KK` with X25519, ChaCha20-Poly1305 and SHA-256
/// (`Noise_KK_25519_ChaChaPoly_SHA256`, noiseprotocol.org revision 34), built from libsodium:
///
///     KK:
///       -> s
///       <- s
///       ...
///       -> e, es, ss
///       <- e, ee, se
///
/// Both sides know each other's static key beforehand; the handshake adds an ephemeral key on
/// each side, so the session keys are forward secret and the peers mutually authenticated.
/// Checked against the cacophony vectors (fixtures/external/noise-kk-cacophony.json).
public final class NoiseKK {
    public static let protocolName = "Noise_KK_25519_ChaChaPoly_SHA256"
    /// The largest Noise message (spec §3).
    public static let maximumMessage = 65_535

    public enum Role: Sendable { case initiator, responder }

    /// One direction of the transport phase: a key and a message counter.
    public final class CipherState {
        let key: SecureBytes
        private(set) var n: UInt64 = 0
        init(key: SecureBytes) { self.key = key }

        /// Encrypts the next transport message.
        public func seal(_ plaintext: [UInt8]) -> [UInt8] {
            precondition(plaintext.count + ChaCha20Poly1305.tagByteCount <= NoiseKK.maximumMessage)
            precondition(n < UInt64.max, "nonce exhausted")
            defer { n += 1 }
            return ChaCha20Poly1305.seal(plaintext, key: key, n: n, associatedData: [])
        }

        /// Decrypts the next transport message; the counter advances only on success.
        public func open(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
            guard ciphertext.count <= NoiseKK.maximumMessage, n < UInt64.max else { throw .authenticationFailed }
            let plain = try ChaCha20Poly1305.open(ciphertext, key: key, n: n, associatedData: [])
            n += 1
            return plain
        }
    }

    public let role: Role
    private let s: X25519.SecretKey
    private let e: X25519.SecretKey
    /// The peer's static key, known in advance.
    public let remoteStatic: X25519.PublicKey
    private var re: X25519.PublicKey?
    private var ck: SecureBytes
    private var h: [UInt8]
    private var k: SecureBytes?
    private var n: UInt64 = 0
    private var step = 0

    /// A handshake in `role` with our static key `s`, the peer's `remoteStatic`, and `prologue`
    /// (bound into the transcript: both sides must use the same). `ephemeral` is for test vectors:
    /// leave it nil for a fresh random key.
    public init(role: Role, prologue: [UInt8], staticKey s: X25519.SecretKey, remoteStatic: X25519.PublicKey,
                ephemeral: X25519.SecretKey? = nil) {
        self.role = role
        self.s = s
        self.e = ephemeral ?? X25519.SecretKey()
        self.remoteStatic = remoteStatic
        // The name is 32 bytes long: h is the name itself (padded to HASHLEN when shorter).
        let name = Array(Self.protocolName.utf8)
        h = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : SHA256.hash(name)
        ck = SecureBytes(copying: h)
        mixHash(prologue)
        // Pre-messages: the initiator's static key, then the responder's.
        let (initiatorStatic, responderStatic) = role == .initiator ? (s.publicKey, remoteStatic) : (remoteStatic, s.publicKey)
        mixHash(initiatorStatic.rawRepresentation)
        mixHash(responderStatic.rawRepresentation)
    }

    /// The handshake hash: identifies the session once the handshake is complete (channel binding).
    public var handshakeHash: [UInt8] { h }
    public var isComplete: Bool { step == 2 }

    private func mixHash(_ data: [UInt8]) { h = SHA256.hash(h + data) }

    /// Noise's HKDF with two outputs.
    private func hkdf(_ input: SecureBytes) -> (SecureBytes, SecureBytes) {
        let temp = HMACSHA256.authenticationCode(for: [.secret(input)], key: ck)
        let out1 = HMACSHA256.authenticationCode(for: [.plain([1])], key: temp)
        let out2 = HMACSHA256.authenticationCode(for: [.secret(out1), .plain([2])], key: temp)
        return (out1, out2)
    }

    private func mixKey(_ dh: SecureBytes) {
        let (newCK, tempK) = hkdf(dh)
        ck = newCK
        k = tempK
        n = 0
    }

    private func encryptAndHash(_ plaintext: [UInt8]) -> [UInt8] {
        guard let k else { mixHash(plaintext); return plaintext }
        let c = ChaCha20Poly1305.seal(plaintext, key: k, n: n, associatedData: h)
        n += 1
        mixHash(c)
        return c
    }

    private func decryptAndHash(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let k else { mixHash(ciphertext); return ciphertext }
        let p = try ChaCha20Poly1305.open(ciphertext, key: k, n: n, associatedData: h)
        n += 1
        mixHash(ciphertext)
        return p
    }

    private func dh(_ secret: X25519.SecretKey, _ pub: X25519.PublicKey) throws(CryptoError) -> SecureBytes {
        try secret.sharedSecret(with: pub)
    }

    /// Writes the next handshake message (the initiator's first, or the responder's reply) with `payload`.
    public func writeMessage(_ payload: [UInt8]) throws(CryptoError) -> [UInt8] {
        switch (role, step) {
        case (.initiator, 0):
            // -> e, es, ss
            var out = e.publicKey.rawRepresentation
            mixHash(out)
            mixKey(try dh(e, remoteStatic))
            mixKey(try dh(s, remoteStatic))
            out += encryptAndHash(payload)
            step = 1
            return out
        case (.responder, 1):
            // <- e, ee, se
            guard let re else { preconditionFailure("no initiator ephemeral") }
            var out = e.publicKey.rawRepresentation
            mixHash(out)
            mixKey(try dh(e, re))
            mixKey(try dh(e, remoteStatic))
            out += encryptAndHash(payload)
            step = 2
            return out
        default:
            preconditionFailure("writeMessage out of turn")
        }
    }

    /// Reads the peer's handshake message and returns its payload; `.authenticationFailed` for
    /// anything not made by the holder of the expected static key.
    public func readMessage(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard message.count >= 32 + ChaCha20Poly1305.tagByteCount, message.count <= Self.maximumMessage else {
            throw .authenticationFailed
        }
        let peerEphemeral = try X25519.PublicKey(rawRepresentation: message.prefix(32))
        let rest = Array(message.dropFirst(32))
        switch (role, step) {
        case (.responder, 0):
            re = peerEphemeral
            mixHash(peerEphemeral.rawRepresentation)
            mixKey(try dh(s, peerEphemeral))      // es, seen from the responder
            mixKey(try dh(s, remoteStatic))       // ss
            let payload = try decryptAndHash(rest)
            step = 1
            return payload
        case (.initiator, 1):
            re = peerEphemeral
            mixHash(peerEphemeral.rawRepresentation)
            mixKey(try dh(e, peerEphemeral))      // ee
            mixKey(try dh(s, peerEphemeral))      // se, seen from the initiator
            let payload = try decryptAndHash(rest)
            step = 2
            return payload
        default:
            preconditionFailure("readMessage out of turn")
        }
    }

    /// The peer's ephemeral key once its handshake message was read (a replay cache keys on it).
    public var remoteEphemeral: X25519.PublicKey? { re }

    /// The two transport cipher states, ours to send and ours to receive, once the handshake is complete.
    public func split() -> (send: CipherState, receive: CipherState) {
        precondition(isComplete)
        let (k1, k2) = hkdf(SecureBytes(count: 0) { _ in })
        let c1 = CipherState(key: k1), c2 = CipherState(key: k2)
        return role == .initiator ? (c1, c2) : (c2, c1)
    }
}
