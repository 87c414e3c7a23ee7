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
    /// A key exchange produced the all-zero X25519 secret or the ristretto255 identity (a low-order
    /// or invalid peer key).
    case weakSharedSecret
    /// Bytes are not the canonical encoding of a ristretto255 element, or encode the identity.
    case invalidPoint
    /// A ristretto255 scalar is zero or not reduced (not below the group order).
    case invalidScalar
    /// A PAKE message is not well formed: a bad length prefix, or bytes missing or left over.
    case malformedMessage
    /// A PAKE peer sent back our own message: a reflection, never an honest peer.
    case reflectedMessage
    /// The peer's PAKE key confirmation did not match: a different password, or a tampered exchange.
    case confirmationFailed
    /// A signature is not in the encoding expected (P-256: strict DER or 64-byte r ‖ s).
    case invalidSignatureEncoding
    /// A private key is not a valid scalar for its curve (P-256: 1 … n−1).
    case invalidPrivateKey
}

extension CryptoError {
    /// `bytes` as an array when it holds exactly `count` bytes, else `.invalidLength` naming `what`.
    static func checked<D: Collection>(_ bytes: D, count: Int, what: String) throws(CryptoError) -> [UInt8] where D.Element == UInt8 {
        let raw = Array(bytes)
        guard raw.count == count else { throw .invalidLength(what: what, expected: count, actual: raw.count) }
        return raw
    }
}
