internal import CSodium

/// The ristretto255 prime-order group (RFC 9496) through libsodium: elements, secret scalars,
/// element derivation from 64 uniform bytes ("hash to group") and scalar multiplication.
///
/// No value of these types is the identity or a zero scalar: decoding refuses them and every
/// operation that could produce one throws instead.
public enum Ristretto255 {
    /// Encoded element length in bytes.
    public static let byteCount = 32
    /// Scalar length in bytes (little-endian, below the group order).
    public static let scalarByteCount = 32
    /// Input length of the element derivation (`from_hash`) and of `Scalar(reducing:)`.
    public static let uniformByteCount = 64

    /// A ristretto255 element other than the identity, as its 32-byte canonical encoding.
    public struct Point: Hashable, Sendable {
        /// Encoded length in bytes.
        public static let byteCount = Ristretto255.byteCount
        /// The canonical encoding.
        public let rawRepresentation: [UInt8]

        /// The ristretto255 generator B (its encoding is [1]B in RFC 9496, Appendix A.1).
        public static let generator = Point(unchecked: [
            0xe2, 0xf2, 0xae, 0x0a, 0x6a, 0xbc, 0x4e, 0x71, 0xa8, 0x84, 0xa9, 0x61, 0xc5, 0x00, 0x51, 0x5f,
            0x58, 0xe3, 0x0b, 0x6a, 0xa5, 0x82, 0xdd, 0x8d, 0xb6, 0xa6, 0x59, 0x45, 0xe0, 0x8d, 0x2d, 0x76,
        ])

        /// Decodes 32 bytes; refuses non-canonical encodings, encodings of no element and the identity.
        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            let raw = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "ristretto255 element")
            guard Ristretto255.isValidNonIdentity(raw) else { throw .invalidPoint }
            self.rawRepresentation = raw
        }

        /// The element derived from 64 uniform bytes, such as a SHA-512 digest (RFC 9496, section 4.3.4).
        ///
        /// Throws `.invalidPoint` when the result is the identity, which no hash output is known to give.
        public init<D: Collection>(uniformBytes: D) throws(CryptoError) where D.Element == UInt8 {
            let input = Array(uniformBytes)
            precondition(input.count == Ristretto255.uniformByteCount, "ristretto255 element derivation takes 64 bytes")
            var out = [UInt8](repeating: 0, count: Self.byteCount)
            let rc = input.withUnsafeBytes { i in
                out.withUnsafeMutableBytes { Ristretto255.derive(from: i, into: $0) }
            }
            guard rc else { throw .invalidPoint }
            rawRepresentation = out
        }

        /// `scalar` times the generator B.
        public init(generatorTimes scalar: Scalar) {
            Sodium.ensureReady()
            var out = [UInt8](repeating: 0, count: Self.byteCount)
            let rc = scalar.rawRepresentation.withUnsafeBytes { n in
                out.withUnsafeMutableBufferPointer { q in
                    crypto_scalarmult_ristretto255_base(q.baseAddress!, n.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            // Only a scalar that is 0 modulo the group order gives the identity; Scalar refuses those.
            precondition(rc == 0, "crypto_scalarmult_ristretto255_base failed")
            rawRepresentation = out
        }

        init(unchecked raw: [UInt8]) { rawRepresentation = raw }

        /// `scalar` times this element, as a public element; throws `.weakSharedSecret` on the identity.
        public func multiplied(by scalar: Scalar) throws(CryptoError) -> Point {
            var out = [UInt8](repeating: 0, count: Self.byteCount)
            let ok = scalar.rawRepresentation.withUnsafeBytes { n in
                rawRepresentation.withUnsafeBytes { p in
                    out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) }
                }
            }
            guard ok else { throw .weakSharedSecret }
            return Point(unchecked: out)
        }

        /// The sum of this element and `other`; throws `.invalidPoint` when it is the identity.
        public func adding(_ other: Point) throws(CryptoError) -> Point {
            try combine(other, subtract: false)
        }

        /// This element minus `other`; throws `.invalidPoint` when it is the identity (equal elements).
        public func subtracting(_ other: Point) throws(CryptoError) -> Point {
            try combine(other, subtract: true)
        }

        private func combine(_ other: Point, subtract: Bool) throws(CryptoError) -> Point {
            Sodium.ensureReady()
            var out = [UInt8](repeating: 0, count: Self.byteCount)
            let rc = rawRepresentation.withUnsafeBufferPointer { p in
                other.rawRepresentation.withUnsafeBufferPointer { q in
                    out.withUnsafeMutableBufferPointer { r in
                        subtract ? crypto_core_ristretto255_sub(r.baseAddress!, p.baseAddress!, q.baseAddress!)
                            : crypto_core_ristretto255_add(r.baseAddress!, p.baseAddress!, q.baseAddress!)
                    }
                }
            }
            // Both operands are valid, so libsodium cannot fail; the identity is refused here.
            precondition(rc == 0, "crypto_core_ristretto255_add/sub failed")
            guard !Ristretto255.isIdentity(out) else { throw .invalidPoint }
            return Point(unchecked: out)
        }
    }

    /// A ristretto255 element that must stay secret, such as CPace's password-derived generator or
    /// a Diffie-Hellman result, in guarded memory.
    public final class SecretPoint: Sendable {
        /// The canonical 32-byte encoding, in guarded memory.
        public let rawRepresentation: SecureBytes

        /// Decodes 32 secret bytes; refuses non-canonical encodings and the identity.
        public init(rawRepresentation: SecureBytes) throws(CryptoError) {
            guard rawRepresentation.count == Ristretto255.byteCount else {
                throw .invalidLength(what: "ristretto255 element", expected: Ristretto255.byteCount, actual: rawRepresentation.count)
            }
            guard rawRepresentation.withUnsafeBytes({ Ristretto255.isValidNonIdentity($0) }) else { throw .invalidPoint }
            self.rawRepresentation = rawRepresentation
        }

        /// The element derived from 64 secret uniform bytes (RFC 9496, section 4.3.4), kept secret.
        public init(uniformBytes: SecureBytes) throws(CryptoError) {
            precondition(uniformBytes.count == Ristretto255.uniformByteCount, "ristretto255 element derivation takes 64 bytes")
            var ok = false
            rawRepresentation = SecureBytes(count: Ristretto255.byteCount) { out in
                uniformBytes.withUnsafeBytes { ok = Ristretto255.derive(from: $0, into: out) }
            }
            guard ok else { throw .invalidPoint }
        }

        init(unchecked raw: SecureBytes) { rawRepresentation = raw }

        /// `scalar` times this secret element, as a public element (a PAKE share); throws
        /// `.weakSharedSecret` on the identity.
        public func multiplied(by scalar: Scalar) throws(CryptoError) -> Point {
            var out = [UInt8](repeating: 0, count: Ristretto255.byteCount)
            let ok = scalar.rawRepresentation.withUnsafeBytes { n in
                rawRepresentation.withUnsafeBytes { p in
                    out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) }
                }
            }
            guard ok else { throw .weakSharedSecret }
            return Point(unchecked: out)
        }
    }

    /// A nonzero ristretto255 scalar below the group order, kept in guarded memory.
    public final class Scalar: Sendable {
        /// Length in bytes.
        public static let byteCount = Ristretto255.scalarByteCount
        /// The 32-byte little-endian encoding, in guarded memory.
        public let rawRepresentation: SecureBytes

        /// A uniformly random scalar in [1, order - 1] (the sampling CPace allows besides bit masking).
        public init() {
            Sodium.ensureReady()
            rawRepresentation = SecureBytes(count: Self.byteCount) { out in
                crypto_core_ristretto255_scalar_random(out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }

        /// Takes 32 secret bytes; refuses a scalar that is zero or not below the group order.
        public init(rawRepresentation: SecureBytes) throws(CryptoError) {
            guard rawRepresentation.count == Self.byteCount else {
                throw .invalidLength(what: "ristretto255 scalar", expected: Self.byteCount, actual: rawRepresentation.count)
            }
            Sodium.ensureReady()
            // libsodium 1.0.18 exports no canonicity check: reduce a zero-extended copy and compare.
            let reduced = SecureBytes(count: Self.byteCount) { out in
                var wide = [UInt8](repeating: 0, count: Ristretto255.uniformByteCount)
                defer { wipe(&wide) }
                rawRepresentation.withUnsafeBytes { src in wide.withUnsafeMutableBytes { $0.copyMemory(from: src) } }
                crypto_core_ristretto255_scalar_reduce(out.baseAddress!.assumingMemoryBound(to: UInt8.self), wide)
            }
            let isZero = rawRepresentation.withUnsafeBytes { sodium_is_zero($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) } == 1
            guard reduced == rawRepresentation, !isZero else { throw .invalidScalar }
            self.rawRepresentation = rawRepresentation
        }

        /// 64 secret uniform bytes reduced modulo the group order; `.invalidScalar` if that is zero.
        public init(reducing wide: SecureBytes) throws(CryptoError) {
            precondition(wide.count == Ristretto255.uniformByteCount, "ristretto255 scalar reduction takes 64 bytes")
            Sodium.ensureReady()
            var isZero = false
            rawRepresentation = SecureBytes(count: Self.byteCount) { out in
                let r = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
                wide.withUnsafeBytes { crypto_core_ristretto255_scalar_reduce(r, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
                isZero = sodium_is_zero(r, out.count) == 1
            }
            if isZero { throw .invalidScalar }
        }

        init(unchecked raw: SecureBytes) { rawRepresentation = raw }

        /// The multiplicative inverse modulo the group order.
        public func inverted() -> Scalar {
            var rc: Int32 = -1
            let out = SecureBytes(count: Self.byteCount) { out in
                rawRepresentation.withUnsafeBytes { s in
                    rc = crypto_core_ristretto255_scalar_invert(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                                 s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            // Only zero has no inverse, and a Scalar is never zero.
            precondition(rc == 0, "crypto_core_ristretto255_scalar_invert failed")
            return Scalar(unchecked: out)
        }

        /// The product with `other` modulo the group order (never zero: the order is prime).
        public func multiplied(by other: Scalar) -> Scalar {
            let out = SecureBytes(count: Self.byteCount) { out in
                rawRepresentation.withUnsafeBytes { a in
                    other.rawRepresentation.withUnsafeBytes { b in
                        crypto_core_ristretto255_scalar_mul(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                            a.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                            b.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
            return Scalar(unchecked: out)
        }

        /// This scalar times `peer`, kept secret (a Diffie-Hellman result); `.weakSharedSecret` on the identity.
        public func sharedSecret(with peer: Point) throws(CryptoError) -> SecretPoint {
            var ok = false
            let out = SecureBytes(count: Ristretto255.byteCount) { out in
                rawRepresentation.withUnsafeBytes { n in
                    peer.rawRepresentation.withUnsafeBytes { p in ok = Ristretto255.multiply(n, p, into: out) }
                }
            }
            guard ok else { throw .weakSharedSecret }
            return SecretPoint(unchecked: out)
        }
    }

    // MARK: libsodium calls, lengths checked right before each

    /// True when `encoding` is a canonical encoding of an element other than the identity.
    ///
    /// libsodium 1.0.18's `crypto_core_ristretto255_is_valid_point` falls short of RFC 9496 twice,
    /// so both are checked here: it accepts the identity (all zeros), and it ignores the top bit, so
    /// that `s | 2^255` passes as a second encoding of `s` (`00…80` decodes to the identity).
    static func isValidNonIdentity(_ encoding: UnsafeRawBufferPointer) -> Bool {
        precondition(encoding.count == byteCount)
        Sodium.ensureReady()
        let p = encoding.baseAddress!.assumingMemoryBound(to: UInt8.self)
        return p[byteCount - 1] & 0x80 == 0 && crypto_core_ristretto255_is_valid_point(p) == 1 && sodium_is_zero(p, byteCount) == 0
    }

    static func isValidNonIdentity(_ encoding: [UInt8]) -> Bool {
        encoding.withUnsafeBytes { isValidNonIdentity($0) }
    }

    /// True for the identity's only canonical encoding, 32 zero bytes.
    static func isIdentity(_ encoding: [UInt8]) -> Bool {
        precondition(encoding.count == byteCount)
        Sodium.ensureReady()
        return sodium_is_zero(encoding, byteCount) == 1
    }

    /// `from_hash`; false (and `out` zeroed) when the result is the identity.
    static func derive(from uniform: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(uniform.count == uniformByteCount && out.count == byteCount)
        Sodium.ensureReady()
        let q = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let rc = crypto_core_ristretto255_from_hash(q, uniform.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(rc == 0, "crypto_core_ristretto255_from_hash failed")
        return sodium_is_zero(q, byteCount) == 0
    }

    /// `q = n·p`; false when `p` does not decode or the result is the identity (libsodium returns -1
    /// for both). libsodium clears the top bit of `n` and does not reduce it: callers pass canonical scalars.
    static func multiply(_ n: UnsafeRawBufferPointer, _ p: UnsafeRawBufferPointer, into q: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(n.count == scalarByteCount && p.count == byteCount && q.count == byteCount)
        Sodium.ensureReady()
        return crypto_scalarmult_ristretto255(q.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                              n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                              p.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
    }
}
