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
}

extension SecureRandom {
    /// A uniformly random integer in 0..<upperBound (libsodium's `randombytes_uniform`).
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ensureReady()
        return randombytes_uniform(upperBound)
    }

    /// Shuffles `items` uniformly (Fisher–Yates with libsodium's randomness).
    public static func shuffle<T>(_ items: inout [T]) {
        guard items.count > 1 else { return }
        for i in stride(from: items.count - 1, to: 0, by: -1) {
            items.swapAt(i, Int(uniform(UInt32(i + 1))))
        }
    }
}
