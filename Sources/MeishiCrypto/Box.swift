internal import CSodium

/// Authenticated encryption between two static X25519 keys (libsodium `crypto_box_easy`:
/// X25519, HSalsa20, XSalsa20-Poly1305). Either key holder can make a box the other opens,
/// so a box proves nothing to a third party about which of the two made it.
public enum Box {
    public static var nonceByteCount: Int { Sodium.ensureReady(); return Int(crypto_box_noncebytes()) }
    public static var overhead: Int { Sodium.ensureReady(); return Int(crypto_box_macbytes()) }

    /// `message` boxed from `sender` to `recipient` under `nonce` (24 bytes, never reused for the pair).
    public static func seal(_ message: [UInt8], nonce: [UInt8], to recipient: X25519.PublicKey,
                            from sender: X25519.SecretKey) throws(CryptoError) -> [UInt8] {
        Sodium.ensureReady()
        guard nonce.count == nonceByteCount else { throw .invalidLength(what: "nonce", expected: nonceByteCount, actual: nonce.count) }
        var out = [UInt8](repeating: 0, count: message.count + overhead)
        let rc = sender.rawRepresentation.withUnsafeBytes { sk in
            crypto_box_easy(&out, message, UInt64(message.count), nonce, recipient.rawRepresentation,
                            sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard rc == 0 else { throw .invalidPublicKey }
        return out
    }

    /// The message in a box from `sender` to `recipient`, or `.authenticationFailed`.
    public static func open(_ box: [UInt8], nonce: [UInt8], from sender: X25519.PublicKey,
                            to recipient: X25519.SecretKey) throws(CryptoError) -> SecureBytes {
        Sodium.ensureReady()
        guard nonce.count == nonceByteCount, box.count >= overhead else { throw .authenticationFailed }
        var ok = false
        let plain = SecureBytes(count: box.count - overhead) { out in
            recipient.rawRepresentation.withUnsafeBytes { sk in
                ok = crypto_box_open_easy(out.baseAddress!.assumingMemoryBound(to: UInt8.self), box, UInt64(box.count), nonce,
                                          sender.rawRepresentation, sk.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
        guard ok else { throw .authenticationFailed }
        return plain
    }
}
