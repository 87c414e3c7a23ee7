import MeishiCrypto

// A Solidarity card's proof lives with its format (as PayloadSignature.swift for meishi's own):
// issuing signs the JCS token with ES256, and `CardVerifier` is the only maker of a
// `VerifiedSolidarityCard` (docs/PROTOCOL.md 6.2).

/// A Solidarity card whose ES256 signature, key binding and times have been checked.
public struct VerifiedSolidarityCard: Sendable {
    public let card: SolidarityCard
    /// The issuer's key, the one `card.issuer` names.
    public let publicKey: P256.PublicKey
    /// Seconds since `iat` (negative for a clock slightly ahead). A static QR can be replayed,
    /// so this says how old the card is, not when it was shown.
    public let ageSeconds: Int64

    public var did: String { card.issuer }
}

extension CardVerifier {
    /// Checks a compact JWS as Solidarity does, in this order: shape and `alg` (parse), the key
    /// of `iss` on the curve, every embedded JWK equal to it, the signature (r ‖ s, or DER)
    /// over the ASCII `header.payload`, then `nbf`, `exp` and `iat` against the clock, with the
    /// same allowed skew as meishi's own cards.
    public func verify(solidarity text: String) throws(SolidarityError) -> VerifiedSolidarityCard {
        let card = try SolidarityCard.parse(text)
        guard let key = try? P256.PublicKey(compressedRepresentation: card.issuerKey) else {
            throw .malformed("\"iss\" names no point on P-256")
        }
        for jwk in card.embeddedKeys {
            guard let embedded = try? P256.PublicKey(x: jwk.x, y: jwk.y), embedded == key else {
                throw .keyMismatch("the embedded publicKeyJwk is not the key of \"iss\"")
            }
        }
        // A 64-byte signature is r ‖ s; DER is accepted too. Either one verifying is enough.
        var candidates: [P256.Signature] = []
        if let raw = try? P256.Signature(rawRepresentation: card.signature) { candidates.append(raw) }
        if let der = try? P256.Signature(derRepresentation: card.signature) { candidates.append(der) }
        guard candidates.contains(where: { key.isValidSignature($0, for: card.signingInput) }) else { throw .badSignature }
        let seconds = clock()
        if let nbf = card.notBefore, nbf > seconds + maximumSkew { throw .notYetValid(seconds: nbf - seconds) }
        if let exp = card.expires, exp <= seconds { throw .expired(seconds: seconds - exp) }
        if card.issuedAt > seconds + maximumSkew { throw .fromTheFuture(seconds: card.issuedAt - seconds) }
        return VerifiedSolidarityCard(card: card, publicKey: key, ageSeconds: seconds - card.issuedAt)
    }
}

extension SolidarityCard {
    /// A didSigned card of `fields` (`name` required), issued by `key` with `sameAs` linked
    /// (meishi's Ed25519 did:key): the JCS token of `unsignedToken`, signed ES256 (r ‖ s).
    public static func sign(fields: [FieldName: [String]], key: P256.SigningKey, sameAs: [String], issuedAt: Int64,
                            id: String) -> String {
        let unsigned = unsignedToken(fields: fields, issuer: DIDKey.did(for: key.publicKey),
                                     jwk: SolidarityJWK(x: key.publicKey.x, y: key.publicKey.y),
                                     sameAs: sameAs, issuedAt: issuedAt, id: id)
        return unsigned + "." + Base64URL.encode(key.signature(for: Array(unsigned.utf8)).rawRepresentation)
    }
}
