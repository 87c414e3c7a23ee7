internal import CSodium

/// SHA-512 (FIPS 180-4) through libsodium.
public enum SHA512 {
    /// Digest length in bytes.
    public static let byteCount = 64
    /// Input block size in bytes (CPace's `s_in_bytes`).
    public static let blockByteCount = 128

    /// The 64-byte digest of `data`.
    public static func hash<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: byteCount)
        let input = Array(data)
        let rc = input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                crypto_hash_sha512(o.baseAddress!, inp.baseAddress, UInt64(inp.count))
            }
        }
        precondition(rc == 0, "crypto_hash_sha512 failed")
        return out
    }

    /// The digest of a secret, in guarded memory.
    public static func hash(_ secret: SecureBytes) -> SecureBytes {
        hash(parts: [.secret(secret)])
    }

    /// The digest of `parts` hashed one after another, in guarded memory; the hash state is wiped.
    static func hash(parts: [HashPart]) -> SecureBytes {
        Sodium.ensureReady()
        var state = crypto_hash_sha512_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) } }
        var rc = crypto_hash_sha512_init(&state)
        precondition(rc == 0, "crypto_hash_sha512_init failed")
        for part in parts {
            switch part {
            case .plain(let bytes):
                rc = bytes.withUnsafeBufferPointer { crypto_hash_sha512_update(&state, $0.baseAddress, UInt64($0.count)) }
            case .secret(let secret):
                rc = secret.withUnsafeBytes {
                    crypto_hash_sha512_update(&state, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64($0.count))
                }
            }
            precondition(rc == 0, "crypto_hash_sha512_update failed")
        }
        return SecureBytes(count: byteCount) { out in
            rc = crypto_hash_sha512_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            precondition(rc == 0, "crypto_hash_sha512_final failed")
        }
    }
}

/// A piece of a hash or MAC input: public bytes, or a secret that stays in guarded memory.
enum HashPart {
    case plain([UInt8])
    case secret(SecureBytes)

    var count: Int {
        switch self {
        case .plain(let bytes): return bytes.count
        case .secret(let secret): return secret.count
        }
    }
}

extension SecureBytes {
    /// `parts` one after another in new guarded memory.
    convenience init(joining parts: [HashPart]) {
        self.init(count: parts.reduce(0) { $0 + $1.count }) { out in
            var offset = 0
            for part in parts {
                switch part {
                case .plain(let bytes):
                    bytes.withUnsafeBytes { if let base = $0.baseAddress { (out.baseAddress! + offset).copyMemory(from: base, byteCount: $0.count) } }
                case .secret(let secret):
                    secret.withUnsafeBytes { if let base = $0.baseAddress { (out.baseAddress! + offset).copyMemory(from: base, byteCount: $0.count) } }
                }
                offset += part.count
            }
        }
    }
}
