internal import CSodium

/// SHA-512 (FIPS 180-4) through libsodium.
public enum SHA512 {
    /// Digest length in bytes.
    public static let byteCount = 64
    /// Input block size in bytes (CPace's `s_in_bytes`).
    public static let blockByteCount = 128

    /// The 64-byte digest of `data`.
    public static func hash<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        oneShotHash(data, count: byteCount, name: "crypto_hash_sha512", crypto_hash_sha512)
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

/// HMAC-SHA512 (RFC 2104; vectors in RFC 4231) through libsodium, with a key of any length.
public enum HMACSHA512 {
    /// Tag length in bytes.
    public static let byteCount = 64

    /// The 64-byte tag of `message` under `key`.
    public static func authenticationCode<M: Collection>(for message: M, key: SecureBytes) -> [UInt8] where M.Element == UInt8 {
        Sodium.ensureReady()
        var state = crypto_auth_hmacsha512_state()
        defer { withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) } }
        var out = [UInt8](repeating: 0, count: byteCount)
        let msg = Array(message)
        var rc = key.withUnsafeBytes {
            crypto_auth_hmacsha512_init(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count)
        }
        precondition(rc == 0, "crypto_auth_hmacsha512_init failed")
        rc = msg.withUnsafeBufferPointer { crypto_auth_hmacsha512_update(&state, $0.baseAddress, UInt64($0.count)) }
        precondition(rc == 0, "crypto_auth_hmacsha512_update failed")
        rc = crypto_auth_hmacsha512_final(&state, &out)
        precondition(rc == 0, "crypto_auth_hmacsha512_final failed")
        return out
    }

    /// True when `tag` is the tag of `message` under `key`; the comparison takes constant time.
    public static func isValidAuthenticationCode<M: Collection>(_ tag: [UInt8], for message: M, key: SecureBytes) -> Bool
    where M.Element == UInt8 {
        let expected = authenticationCode(for: message, key: key)
        guard tag.count == byteCount else { return false }
        return expected.withUnsafeBytes { e in tag.withUnsafeBytes { t in sodium_memcmp(e.baseAddress!, t.baseAddress!, byteCount) == 0 } }
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
