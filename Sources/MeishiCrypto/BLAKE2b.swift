internal import CSodium

/// BLAKE2b (RFC 7693) as libsodium's `crypto_generichash`, and its key derivation (`crypto_kdf`).
public enum BLAKE2b {
    /// A `length`-byte (16…64) BLAKE2b hash of `message`, keyed with `key` (16…64 bytes) when given.
    public static func hash(_ message: [UInt8], key: SecureBytes? = nil, length: Int = 32) -> SecureBytes {
        Sodium.ensureReady()
        precondition((16...64).contains(length))
        precondition(key == nil || (16...64).contains(key!.count))
        var rc: Int32 = -1
        let out = SecureBytes(count: length) { out in
            if let key {
                key.withUnsafeBytes { k in
                    rc = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, message, UInt64(message.count),
                                            k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
                }
            } else {
                rc = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, message, UInt64(message.count), nil, 0)
            }
        }
        precondition(rc == 0, "crypto_generichash failed")
        return out
    }

    /// Subkey `id` of a 32-byte master key for an 8-character `context` (libsodium crypto_kdf).
    public static func deriveKey(from master: SecureBytes, id: UInt64, context: String, length: Int = 32) -> SecureBytes {
        Sodium.ensureReady()
        let ctx = Array(context.utf8)
        precondition(ctx.count == 8 && master.count == 32 && (16...64).contains(length))
        var rc: Int32 = -1
        let out = SecureBytes(count: length) { out in
            master.withUnsafeBytes { m in
                ctx.withUnsafeBufferPointer { c in
                    c.baseAddress!.withMemoryRebound(to: CChar.self, capacity: 8) { cp in
                        rc = crypto_kdf_derive_from_key(out.baseAddress!.assumingMemoryBound(to: UInt8.self), length, id, cp,
                                                        m.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        precondition(rc == 0, "crypto_kdf_derive_from_key failed")
        return out
    }
}
