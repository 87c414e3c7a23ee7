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
    /// A signature is not in the encoding expected (P-256: strict DER or 64-byte r ‖ s).
    case invalidSignatureEncoding
    /// A private key is not a valid scalar for its curve (P-256: 1 … n−1).
    case invalidPrivateKey
}
