/// Failures of the cryptographic layer. Cases carry no secrets and no paths.
public enum CryptoError: Error, Equatable, Sendable {
    /// A key, signature or nonce had the wrong number of bytes.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// A public key is not a valid curve point (or is of small order).
    case invalidPublicKey
    /// Authenticated decryption failed: wrong key, wrong passphrase or tampered data.
    case authenticationFailed
    /// Argon2id could not run with the requested limits (usually: not enough memory).
    case keyDerivationFailed
    /// An X25519 exchange produced the all-zero secret (a low-order peer key).
    case weakSharedSecret
}

extension CryptoError {
    /// `bytes` as an array when it holds exactly `count` bytes, else `.invalidLength` naming `what`.
    static func checked<D: Collection>(_ bytes: D, count: Int, what: String) throws(CryptoError) -> [UInt8] where D.Element == UInt8 {
        let raw = Array(bytes)
        guard raw.count == count else { throw .invalidLength(what: what, expected: count, actual: raw.count) }
        return raw
    }
}
