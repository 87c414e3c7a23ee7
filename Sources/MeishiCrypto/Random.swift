internal import CSodium

/// Cryptographically secure randomness from libsodium.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return out
    }

    /// A random UUID version 4 in lowercase canonical form (RFC 9562 section 5.4).
    public static func uuidV4() -> String {
        var b = bytes(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (n, byte) in b.enumerated() {
            if n == 4 || n == 6 || n == 8 || n == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A uniformly random integer in `0..<upperBound`.
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ensureReady()
        return randombytes_uniform(upperBound)
    }
}
