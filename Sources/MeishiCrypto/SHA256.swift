internal import CSodium

/// SHA-256 (FIPS 180-4) through libsodium.
public enum SHA256 {
    public static let byteCount = 32

    /// The 32-byte digest of `data`.
    public static func hash<D: Collection>(_ data: D) -> [UInt8] where D.Element == UInt8 {
        oneShotHash(data, count: byteCount, name: "crypto_hash_sha256", crypto_hash_sha256)
    }
}
