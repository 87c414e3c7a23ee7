import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

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

/// Reading, storing and issuing the Solidarity app's didSigned cards.
public enum SolidarityService {
    /// How far in the future `iat` and `nbf` may be, for clocks that disagree.
    public static let defaultMaximumSkew: Int64 = 600
    /// `Contact.source` of contacts stored from a Solidarity card.
    public static let source = "solidarity"

    /// Checks a compact JWS as Solidarity does, in this order: shape and `alg` (parse), the key
    /// of `iss` on the curve, every embedded JWK equal to it, the signature (r ‖ s, or DER)
    /// over the ASCII `header.payload`, then `nbf`, `exp` and `iat` against `now`.
    public static func verify(_ text: String, now: Date, maximumSkew: Int64 = defaultMaximumSkew) throws(SolidarityError) -> VerifiedSolidarityCard {
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
        let seconds = Int64(now.timeIntervalSince1970)
        if let nbf = card.notBefore, nbf > seconds + maximumSkew { throw .notYetValid(seconds: nbf - seconds) }
        if let exp = card.expires, exp <= seconds { throw .expired(seconds: seconds - exp) }
        if card.issuedAt > seconds + maximumSkew { throw .fromTheFuture(seconds: card.issuedAt - seconds) }
        return VerifiedSolidarityCard(card: card, publicKey: key, ageSeconds: seconds - card.issuedAt)
    }

    /// Stores a verified card with trust `signed` and source `solidarity` under its P-256 DID.
    /// A newer `iat` replaces the stored card; a different DID using a stored name or email is
    /// flagged like any other (a changed Solidarity key is a new DID).
    public static func store(_ verified: VerifiedSolidarityCard, home: Home, now: Date) throws(MeishiFailure) -> StoreOutcome {
        if SolidarityKeyStore(home: home).storedDID() == verified.did {
            throw MeishiFailure("that is your own Solidarity card", status: .dataError)
        }
        let contact = Contact(did: verified.did, fields: verified.card.fields, level: .public, trust: .signed, source: source,
                              seen: Int64(now.timeIntervalSince1970), cardTimestamp: verified.card.issuedAt,
                              payload: Data(verified.card.text.utf8))
        let store = try ContactsService(home: home).open()
        do { return try store.store(contact) } catch { throw MeishiFailure(error) }
    }

    /// A didSigned card of what `card` discloses at `level` (limited to `only`), issued by the
    /// identity's P-256 key (made on first use) with the meishi did:key in `sameAs`.
    public static func issue(card: Card, level: DisclosureLevel, only: Set<FieldName>?, home: Home,
                             passphrases: PassphraseSource, now: Date, id: String = SecureRandom.uuidV4()) throws(MeishiFailure) -> String {
        let identity = try IdentityStore(home: home).loadPublic()
        let disclosed = card.disclosed(at: level, only: only)
        guard disclosed[.name] != nil else {
            if card.fields[.name] == nil {
                throw MeishiFailure("your card has no name", hint: "meishi card set name \"Your Name\"", status: .dataError)
            }
            throw MeishiFailure("your name is not shared at level \(level.rawValue)",
                                hint: "share at a higher --level, or: meishi card set name NAME --level public", status: .dataError)
        }
        let key = try SolidarityKeyStore(home: home).loadOrCreate(for: identity, passphrases: passphrases)
        let did = DIDKey.did(forP256: key.publicKey.compressedRepresentation)
        let unsigned = SolidarityCard.unsignedToken(fields: disclosed, issuer: did,
                                                    jwk: SolidarityJWK(x: key.publicKey.x, y: key.publicKey.y),
                                                    sameAs: [identity.did], issuedAt: Int64(now.timeIntervalSince1970), id: id)
        return unsigned + "." + Base64URL.encode(key.signature(for: Array(unsigned.utf8)).rawRepresentation)
    }
}

extension MeishiFailure {
    /// A Solidarity card that did not verify; peer text in the reason is escaped for a terminal.
    public init(_ e: SolidarityError) {
        self.init(TerminalText.sanitized(e.reason), status: .dataError)
    }
}
