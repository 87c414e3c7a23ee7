import MeishiCrypto

/// did:key for P-256 keys (multicodec `p256-pub` 0x1200), the identifiers of Solidarity's cards.
extension DIDKey {
    /// The unsigned-varint multicodec prefix of `p256-pub` (0x1200).
    public static let p256Multicodec: [UInt8] = [0x80, 0x24]
    /// Bytes of a SEC 1 compressed P-256 point.
    public static let p256KeyByteCount = 33

    /// `did:key:zDn…` for a 33-byte SEC 1 compressed P-256 public key.
    public static func did(forP256 compressedKey: [UInt8]) -> String {
        precondition(compressedKey.count == p256KeyByteCount)
        return prefix + Base58.encode(p256Multicodec + compressedKey)
    }

    /// The 33-byte compressed key a P-256 `did:key` names (prefix 0x02 or 0x03), or nil when it
    /// is not one. Only the canonical spelling is accepted. Whether the bytes are a point on the
    /// curve is for the crypto layer to say.
    public static func p256PublicKey(from did: String) -> [UInt8]? {
        // 35 bytes of base58 are at most 48 characters: longer text is refused before decoding.
        guard did.hasPrefix(prefix + "Dn"), did.utf8.count <= prefix.utf8.count + 48,
              let bytes = Base58.decode(String(did.dropFirst(prefix.count))),
              bytes.count == p256Multicodec.count + p256KeyByteCount, Array(bytes.prefix(2)) == p256Multicodec else { return nil }
        let key = Array(bytes.dropFirst(2))
        guard key[0] == 0x02 || key[0] == 0x03, self.did(forP256: key) == did else { return nil }
        return key
    }
}

extension DIDKey {
    /// `did:key:zDn…` for a P-256 public key.
    public static func did(for key: P256.PublicKey) -> String { did(forP256: key.compressedRepresentation) }
}
