internal import CSodium

/// X25519 key agreement (RFC 7748) and the keys of sealed messages.
public enum X25519 {
    /// A 32-byte X25519 public key.
    public struct PublicKey: Hashable, Sendable {
        public static let byteCount = 32
        public let rawRepresentation: [UInt8]

        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            self.rawRepresentation = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "X25519 public key")
        }
    }

    /// An X25519 secret key in guarded memory.
    public final class SecretKey: Sendable {
        public static let byteCount = 32
        public let rawRepresentation: SecureBytes
        public let publicKey: PublicKey

        /// A new random key.
        public convenience init() {
            try! self.init(rawRepresentation: SecureBytes(randomCount: Self.byteCount))
        }

        public init(rawRepresentation: SecureBytes) throws(CryptoError) {
            guard rawRepresentation.count == Self.byteCount else {
                throw .invalidLength(what: "X25519 secret key", expected: Self.byteCount, actual: rawRepresentation.count)
            }
            Sodium.ensureReady()
            var pk = [UInt8](repeating: 0, count: PublicKey.byteCount)
            let rc = rawRepresentation.withUnsafeBytes { sk in
                crypto_scalarmult_base(&pk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            // Only an all-zero result fails, which a clamped scalar cannot give.
            precondition(rc == 0, "crypto_scalarmult_base failed")
            self.rawRepresentation = rawRepresentation
            publicKey = try PublicKey(rawRepresentation: pk)
        }

        /// The raw X25519 shared secret with `peer`; refuses the all-zero result.
        public func sharedSecret(with peer: PublicKey) throws(CryptoError) -> SecureBytes {
            var failed = false
            let out = SecureBytes(count: 32) { out in
                rawRepresentation.withUnsafeBytes { sk in
                    peer.rawRepresentation.withUnsafeBufferPointer { pk in
                        failed = crypto_scalarmult(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                   pk.baseAddress!) != 0
                    }
                }
            }
            if failed { throw .weakSharedSecret }
            return out
        }
    }
}

/// Anonymous sealed boxes (libsodium `crypto_box_seal`): anyone can seal to a public key,
/// only the holder of the secret key can open, and the sender stays anonymous.
public enum SealedBox {
    public static var overhead: Int { Sodium.ensureReady(); return Int(crypto_box_sealbytes()) }

    /// Seals `message` to `recipient`; refuses a recipient key that gives no shared secret
    /// (a low-order point), for which libsodium returns an error and no ciphertext.
    public static func seal<M: Collection>(_ message: M, to recipient: X25519.PublicKey) throws(CryptoError) -> [UInt8]
    where M.Element == UInt8 {
        Sodium.ensureReady()
        let msg = Array(message)
        var out = [UInt8](repeating: 0, count: msg.count + overhead)
        let rc = msg.withUnsafeBufferPointer { m in
            crypto_box_seal(&out, m.baseAddress, UInt64(m.count), recipient.rawRepresentation)
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return out
    }

    public static func open<C: Collection>(_ ciphertext: C, with key: X25519.SecretKey) throws(CryptoError) -> [UInt8]
    where C.Element == UInt8 {
        Sodium.ensureReady()
        let ct = Array(ciphertext)
        guard ct.count >= overhead else { throw .authenticationFailed }
        var out = [UInt8](repeating: 0, count: ct.count - overhead)
        let ok = key.rawRepresentation.withUnsafeBytes { sk in
            crypto_box_seal_open(&out, ct, UInt64(ct.count), key.publicKey.rawRepresentation,
                                 sk.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
        }
        guard ok else { throw .authenticationFailed }
        return out
    }
}
