/// ECDSA over NIST P-256 with SHA-256 (JOSE "ES256", RFC 7518 section 3.4), for reading and
/// issuing the Solidarity app's cards and nothing else: meishi's own protocol signs with Ed25519.
///
/// The arithmetic is swift-crypto's (BoringSSL on Linux), reached only through `P256Backend`;
/// this file imports no C and exposes no swift-crypto type.
public enum P256 {
    /// A P-256 public key: a point on the curve, checked when the value is made.
    public struct PublicKey: Hashable, Sendable {
        /// SEC 1 compressed form: `0x02` or `0x03`, then x.
        public static let compressedByteCount = 33
        public static let coordinateByteCount = 32

        /// SEC 1 compressed form (33 bytes), the bytes a P-256 did:key carries.
        public let compressedRepresentation: [UInt8]
        /// The affine x coordinate, 32 bytes big-endian (JWK `x`).
        public let x: [UInt8]
        /// The affine y coordinate, 32 bytes big-endian (JWK `y`).
        public let y: [UInt8]

        /// The key in SEC 1 compressed form. Refuses another length, a prefix other than
        /// 0x02/0x03, an x not below the field prime, and an x with no point on the curve.
        public init<D: Collection>(compressedRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            let raw = Array(compressedRepresentation)
            guard raw.count == Self.compressedByteCount else {
                throw .invalidLength(what: "P-256 compressed public key", expected: Self.compressedByteCount, actual: raw.count)
            }
            guard raw[0] == 0x02 || raw[0] == 0x03, let point = P256Backend.decompress(raw),
                  P256Backend.compress(x: point.x, y: point.y) == raw else { throw .invalidPublicKey }
            self.compressedRepresentation = raw
            x = point.x
            y = point.y
        }

        /// The key with affine coordinates `x` and `y` (32 bytes each), as a JWK names it.
        /// Refuses other lengths and points that are not on the curve.
        public init(x: [UInt8], y: [UInt8]) throws(CryptoError) {
            guard x.count == Self.coordinateByteCount else {
                throw .invalidLength(what: "P-256 x coordinate", expected: Self.coordinateByteCount, actual: x.count)
            }
            guard y.count == Self.coordinateByteCount else {
                throw .invalidLength(what: "P-256 y coordinate", expected: Self.coordinateByteCount, actual: y.count)
            }
            guard let compressed = P256Backend.compress(x: x, y: y) else { throw .invalidPublicKey }
            compressedRepresentation = compressed
            self.x = x
            self.y = y
        }

        /// True when `signature` is a valid ECDSA P-256 signature of SHA-256(`message`) by this key.
        public func isValidSignature<M: Collection>(_ signature: Signature, for message: M) -> Bool where M.Element == UInt8 {
            P256Backend.isValidSignature(signature.rawRepresentation, for: Array(message), x: x, y: y)
        }
    }

    /// An ECDSA P-256 signature as JOSE writes it: r ‖ s, 32 bytes each.
    public struct Signature: Hashable, Sendable {
        public static let byteCount = 64
        /// r ‖ s, 64 bytes.
        public let rawRepresentation: [UInt8]

        /// A signature in JOSE's fixed-width form, r ‖ s.
        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            let raw = Array(rawRepresentation)
            guard raw.count == Self.byteCount else {
                throw .invalidLength(what: "P-256 signature", expected: Self.byteCount, actual: raw.count)
            }
            self.rawRepresentation = raw
        }

        /// A signature in ASN.1 DER form (`SEQUENCE { INTEGER r, INTEGER s }`), as some signers
        /// (and Solidarity's verifier) also accept. Refuses anything that is not strict DER.
        public init<D: Collection>(derRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            guard let raw = P256Backend.rawSignature(fromDER: Array(derRepresentation)) else { throw .invalidSignatureEncoding }
            self.rawRepresentation = raw
        }

        /// The ASN.1 DER form of this signature.
        public var derRepresentation: [UInt8] { P256Backend.derSignature(fromRaw: rawRepresentation) }
    }

    /// A P-256 signing key, its 32-byte scalar kept in guarded memory.
    public final class SigningKey: Sendable {
        public static let byteCount = 32
        /// The secret scalar, 32 bytes big-endian.
        public let rawRepresentation: SecureBytes
        public let publicKey: PublicKey

        /// A new random signing key.
        public convenience init() {
            let scalar = P256Backend.generate()
            try! self.init(rawRepresentation: scalar)
        }

        /// The signing key for a 32-byte scalar in 1 … n−1.
        public init(rawRepresentation: SecureBytes) throws(CryptoError) {
            guard rawRepresentation.count == Self.byteCount else {
                throw .invalidLength(what: "P-256 private key", expected: Self.byteCount, actual: rawRepresentation.count)
            }
            guard let point = P256Backend.publicPoint(of: rawRepresentation) else { throw .invalidPrivateKey }
            self.rawRepresentation = rawRepresentation
            publicKey = try PublicKey(x: point.x, y: point.y)
        }

        /// A (randomised) ECDSA P-256 signature of SHA-256(`message`), as r ‖ s.
        public func signature<M: Collection>(for message: M) -> Signature where M.Element == UInt8 {
            try! Signature(rawRepresentation: P256Backend.sign(Array(message), with: rawRepresentation))
        }
    }
}
