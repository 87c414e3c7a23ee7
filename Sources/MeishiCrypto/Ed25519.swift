internal import CSodium

/// Ed25519 signatures (RFC 8032) through libsodium.
public enum Ed25519 {
    /// An Ed25519 public key: 32 bytes.
    ///
    /// The encoding is not checked here, because `isValidSignature` already refuses keys that are
    /// not canonical or of small order; `isValidPoint` is the full (and slower) check.
    public struct PublicKey: Hashable, Sendable {
        public static let byteCount = 32
        public let rawRepresentation: [UInt8]

        /// Accepts any 32-byte string.
        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            self.rawRepresentation = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "Ed25519 public key")
        }

        /// True when the key is a canonical encoding of a point in the main subgroup.
        public var isValidPoint: Bool {
            Sodium.ensureReady()
            return rawRepresentation.withUnsafeBufferPointer { crypto_core_ed25519_is_valid_point($0.baseAddress!) } == 1
        }

        init(unchecked raw: [UInt8]) { rawRepresentation = raw }

        /// True when `signature` is a valid signature of `message` by this key.
        /// libsodium rejects non-canonical S, small-order R and non-canonical encodings.
        public func isValidSignature<M: Collection>(_ signature: Signature, for message: M) -> Bool
        where M.Element == UInt8 {
            Sodium.ensureReady()
            let msg = Array(message)
            return signature.rawRepresentation.withUnsafeBufferPointer { sig in
                msg.withUnsafeBufferPointer { m in
                    rawRepresentation.withUnsafeBufferPointer { pk in
                        crypto_sign_verify_detached(sig.baseAddress!, m.baseAddress, UInt64(m.count), pk.baseAddress!) == 0
                    }
                }
            }
        }
    }

    /// A 64-byte Ed25519 signature.
    public struct Signature: Hashable, Sendable {
        public static let byteCount = 64
        public let rawRepresentation: [UInt8]

        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            self.rawRepresentation = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "Ed25519 signature")
        }
    }

    /// An Ed25519 signing key, kept as its 32-byte seed in guarded memory.
    public final class SigningKey: Sendable {
        public static let seedByteCount = 32
        /// libsodium's expanded secret key: seed || public key (64 bytes).
        private let expanded: SecureBytes
        /// The 32-byte seed from which the key is derived (RFC 8032 "private key").
        public let seed: SecureBytes
        public let publicKey: PublicKey

        /// A new random signing key.
        public convenience init() {
            try! self.init(seed: SecureBytes(randomCount: Self.seedByteCount))
        }

        /// The signing key for a 32-byte seed.
        public init(seed: SecureBytes) throws(CryptoError) {
            guard seed.count == Self.seedByteCount else {
                throw .invalidLength(what: "Ed25519 seed", expected: Self.seedByteCount, actual: seed.count)
            }
            Sodium.ensureReady()
            var pk = [UInt8](repeating: 0, count: PublicKey.byteCount)
            var rc: Int32 = -1
            expanded = SecureBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { sk in
                seed.withUnsafeBytes { s in
                    rc = crypto_sign_seed_keypair(&pk, sk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                  s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            precondition(rc == 0, "crypto_sign_seed_keypair failed")
            self.seed = seed
            publicKey = PublicKey(unchecked: pk)
        }

        /// The deterministic Ed25519 signature of `message`.
        public func signature<M: Collection>(for message: M) -> Signature where M.Element == UInt8 {
            let msg = Array(message)
            var sig = [UInt8](repeating: 0, count: Signature.byteCount)
            let rc = expanded.withUnsafeBytes { sk in
                msg.withUnsafeBufferPointer { m in
                    crypto_sign_detached(&sig, nil, m.baseAddress, UInt64(m.count),
                                         sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            precondition(rc == 0, "crypto_sign_detached failed")
            return try! Signature(rawRepresentation: sig)
        }
    }
}
