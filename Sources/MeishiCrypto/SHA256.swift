internal import CSodium

/// SHA-256 (FIPS 180-4) through libsodium.
public enum SHA256 {
    public static let byteCount = 32

    /// The 32-byte digest of `data`.
    public static func hash<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: byteCount)
        let input = Array(data)
        let rc = input.withUnsafeBufferPointer { inp in
            out.withUnsafeMutableBufferPointer { o in
                crypto_hash_sha256(o.baseAddress!, inp.baseAddress, UInt64(inp.count))
            }
        }
        precondition(rc == 0, "crypto_hash_sha256 failed")
        return out
    }
}
