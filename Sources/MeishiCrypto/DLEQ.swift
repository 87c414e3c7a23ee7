internal import CSodium
import Dispatch

/// Batched discrete-log-equality proofs of RFC 9497 (the VOPRF), in its ristretto255-SHA512 suite.
///
/// `proof(...)` shows that every `outputs[i]` is `k·inputs[i]` for the one scalar `k` behind
/// `publicKey = k·B`, without revealing `k`: a list returned reordered, with a substituted item,
/// or made with another scalar fails `isValid`. The construction, transcripts and labels are those
/// of RFC 9497 section 2.2 with `contextString = "OPRFV1-" ‖ 0x01 ‖ "-ristretto255-SHA512"`, so the
/// RFC's VOPRF test vectors check it (Tests/MeishiCryptoTests/PSITests.swift).
public enum DLEQ {
    /// `CreateContextString(modeVOPRF, "ristretto255-SHA512")`.
    public static let contextString: [UInt8] = Array("OPRFV1-".utf8) + [0x01] + Array("-ristretto255-SHA512".utf8)

    /// A proof: the scalars c and s, 32 bytes each, little-endian.
    public struct Proof: Equatable, Sendable {
        public static let byteCount = 64
        public let rawRepresentation: [UInt8]

        /// Takes 64 bytes; refuses scalars that are not below the group order.
        public init<D: Collection>(rawRepresentation: D) throws(CryptoError) where D.Element == UInt8 {
            let raw = try CryptoError.checked(rawRepresentation, count: Self.byteCount, what: "DLEQ proof")
            guard DLEQ.isCanonical(Array(raw[0..<32])), DLEQ.isCanonical(Array(raw[32..<64])) else { throw .invalidScalar }
            self.rawRepresentation = raw
        }

        init(c: [UInt8], s: [UInt8]) { rawRepresentation = c + s }
    }

    /// `GenerateProof(k, G, publicKey, inputs, outputs)` with the random scalar `r` (fixed only by vectors).
    public static func proof(scalar k: Ristretto255.Scalar, publicKey: Ristretto255.Point, inputs: [Ristretto255.Point],
                             outputs: [Ristretto255.Point], randomScalar r: Ristretto255.Scalar = Ristretto255.Scalar(),
                             threads: Int = 2) -> Proof {
        precondition(!inputs.isEmpty && inputs.count == outputs.count && inputs.count <= 65_535)
        let weights = compositeWeights(publicKey: publicKey, inputs: inputs, outputs: outputs, threads: threads)
        // M = Σ dᵢ·Cᵢ, Z = k·M (ComputeCompositesFast). M is the identity with negligible probability.
        guard let m = weightedSum(inputs, weights, threads: threads) else { preconditionFailure("DLEQ composite is the identity") }
        let z = try! Ristretto255.Point(rawRepresentation: m).multiplied(by: k).rawRepresentation
        let t2 = Ristretto255.Point(generatorTimes: r).rawRepresentation
        let t3 = try! Ristretto255.Point(rawRepresentation: m).multiplied(by: r).rawRepresentation
        let c = challenge(publicKey.rawRepresentation, m, z, t2, t3)
        // s = r - c·k
        var ck = [UInt8](repeating: 0, count: 32), s = [UInt8](repeating: 0, count: 32)
        k.rawRepresentation.withUnsafeBytes { kb in
            crypto_core_ristretto255_scalar_mul(&ck, c, kb.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        r.rawRepresentation.withUnsafeBytes { rb in
            crypto_core_ristretto255_scalar_sub(&s, rb.baseAddress!.assumingMemoryBound(to: UInt8.self), ck)
        }
        return Proof(c: c, s: s)
    }

    /// `VerifyProof(G, publicKey, inputs, outputs, proof)`.
    public static func isValid(_ proof: Proof, publicKey: Ristretto255.Point, inputs: [Ristretto255.Point],
                               outputs: [Ristretto255.Point], threads: Int = 2) -> Bool {
        guard !inputs.isEmpty, inputs.count == outputs.count, inputs.count <= 65_535 else { return false }
        let weights = compositeWeights(publicKey: publicKey, inputs: inputs, outputs: outputs, threads: threads)
        let sums = PrivateSetIntersection.parallelMap(2, threads: 1) { j in
            weightedSum(j == 0 ? inputs : outputs, weights, threads: threads)
        }
        guard let m = sums[0], let z = sums[1] else { return false }
        let c = Array(proof.rawRepresentation[0..<32]), s = Array(proof.rawRepresentation[32..<64])
        guard let t2 = sum(multiply(s, Ristretto255.Point.generator.rawRepresentation), multiply(c, publicKey.rawRepresentation)),
              let t3 = sum(multiply(s, m), multiply(c, z)) else { return false }
        let expected = challenge(publicKey.rawRepresentation, m, z, t2, t3)
        return sodium_memcmp(expected, c, 32) == 0
    }

    /// The dᵢ of ComputeComposites: HashToScalar(lv(seed) ‖ I2OSP(i, 2) ‖ lv(Cᵢ) ‖ lv(Dᵢ) ‖ "Composite").
    static func compositeWeights(publicKey: Ristretto255.Point, inputs: [Ristretto255.Point], outputs: [Ristretto255.Point],
                                 threads: Int) -> [[UInt8]] {
        let seedDST = Array("Seed-".utf8) + contextString
        let seed = SHA512.hash(lengthPrefixed(publicKey.rawRepresentation) + lengthPrefixed(seedDST))
        let prefix = lengthPrefixed(seed)
        return PrivateSetIntersection.parallelMap(inputs.count, threads: threads) { i in
            hashToScalar(prefix + [UInt8(i >> 8), UInt8(i & 0xFF)] + lengthPrefixed(inputs[i].rawRepresentation)
                         + lengthPrefixed(outputs[i].rawRepresentation) + Array("Composite".utf8))
        }
    }

    /// Σ weights[i]·points[i] over `threads` threads; nil if it is the identity.
    static func weightedSum(_ points: [Ristretto255.Point], _ weights: [[UInt8]], threads: Int) -> [UInt8]? {
        let workers = max(1, min(threads, points.count / 64 + 1))
        let partials = PrivateSetIntersection.parallelMap(workers, threads: workers) { w -> [UInt8]? in
            var acc: [UInt8]?
            for i in points.count * w / workers..<points.count * (w + 1) / workers {
                acc = sum(acc, multiply(weights[i], points[i].rawRepresentation))
            }
            return acc
        }
        return partials.reduce(nil) { sum($0, $1) }
    }

    /// HashToScalar-ristretto255-SHA512 challenge over lv(B) ‖ lv(M) ‖ lv(Z) ‖ lv(t2) ‖ lv(t3) ‖ "Challenge".
    static func challenge(_ parts: [UInt8]...) -> [UInt8] {
        hashToScalar(parts.flatMap(lengthPrefixed) + Array("Challenge".utf8))
    }

    /// `HashToScalar`: expand_message_xmd(SHA-512, DST = "HashToScalar-" ‖ contextString, 64 bytes), reduced.
    public static func hashToScalar(_ input: [UInt8]) -> [UInt8] {
        let wide = expandMessageXMD(input, dst: Array("HashToScalar-".utf8) + contextString, length: 64)
        var out = [UInt8](repeating: 0, count: 32)
        Sodium.ensureReady()
        crypto_core_ristretto255_scalar_reduce(&out, wide)
        return out
    }

    /// expand_message_xmd with SHA-512 (RFC 9380 section 5.3.1), for lengths up to 255·64.
    public static func expandMessageXMD(_ message: [UInt8], dst: [UInt8], length: Int) -> [UInt8] {
        precondition(dst.count <= 255 && length > 0 && length <= 255 * SHA512.byteCount)
        let ell = (length + SHA512.byteCount - 1) / SHA512.byteCount
        let dstPrime = dst + [UInt8(dst.count)]
        let b0 = SHA512.hash([UInt8](repeating: 0, count: SHA512.blockByteCount) + message
                             + [UInt8(length >> 8), UInt8(length & 0xFF), 0] + dstPrime)
        var b = SHA512.hash(b0 + [1] + dstPrime)
        var out = b
        for i in 2...max(2, ell) where i <= ell {
            b = SHA512.hash(zip(b0, b).map { $0 ^ $1 } + [UInt8(i)] + dstPrime)
            out += b
        }
        return Array(out.prefix(length))
    }

    static func lengthPrefixed(_ bytes: [UInt8]) -> [UInt8] { [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes }

    /// True when `scalar` (32 bytes) is below the group order.
    static func isCanonical(_ scalar: [UInt8]) -> Bool {
        Sodium.ensureReady()
        var wide = scalar + [UInt8](repeating: 0, count: 32), reduced = [UInt8](repeating: 0, count: 32)
        crypto_core_ristretto255_scalar_reduce(&reduced, &wide)
        return reduced == scalar
    }

    /// `scalar`·`point` for a public scalar; nil for a zero scalar or an identity result.
    static func multiply(_ scalar: [UInt8], _ point: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: 32)
        let ok = scalar.withUnsafeBytes { n in point.withUnsafeBytes { p in out.withUnsafeMutableBytes { Ristretto255.multiply(n, p, into: $0) } } }
        return ok ? out : nil
    }

    /// The group sum, treating nil as the identity; nil when the sum is the identity.
    static func sum(_ a: [UInt8]?, _ b: [UInt8]?) -> [UInt8]? {
        guard let a else { return b }
        guard let b else { return a }
        var out = [UInt8](repeating: 0, count: 32)
        let rc = crypto_core_ristretto255_add(&out, a, b)
        precondition(rc == 0, "crypto_core_ristretto255_add failed")
        return sodium_is_zero(out, 32) == 1 ? nil : out
    }
}
