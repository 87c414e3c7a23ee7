import Foundation
import MeishiCard
import MeishiCrypto
import MeishiStore

/// Storing and issuing the Solidarity app's didSigned cards (verifying them is the card
/// layer's: `CardVerifier.verify(solidarity:)`).
public enum SolidarityService {
    /// `Contact.source` of contacts stored from a Solidarity card.
    public static let source = ContactSource.solidarity

    /// A didSigned card of what `card` shares at `level` (limited to `only`), issued by the
    /// identity's P-256 key (made on first use) with the meishi did:key in `sameAs`.
    public static func issue(card: Card, level: DisclosureLevel, only: Set<FieldName>?, home: Home,
                             passphrases: PassphraseSource, now: Int64, id: String = ShareID.random()) throws(MeishiError) -> String {
        let identity = try IdentityStore(home: home).loadPublic()
        let disclosed = try CardService.share(card, level: level, only: only)
        let key = try SolidarityKeyStore(home: home).loadOrCreate(for: identity, passphrases: passphrases)
        return SolidarityCard.sign(fields: disclosed, key: key, sameAs: [identity.did], issuedAt: now, id: id)
    }
}

extension ContactsService {
    /// Stores a verified Solidarity card with trust `signed` and source `solidarity` under its
    /// P-256 DID, in `store` when the caller already opened it. A newer `iat` replaces the stored
    /// card; a different DID using a stored name or email is flagged like any other (a changed
    /// Solidarity key is a new DID). Refuses the user's own Solidarity card.
    public func add(_ verified: VerifiedSolidarityCard, now: Int64, event: String? = nil,
                    in store: ContactStore? = nil) throws(MeishiError) -> StoreOutcome {
        if SolidarityKeyStore(home: home).storedDID() == verified.did { throw .ownSolidarityCard }
        let contact = Contact(did: verified.did, fields: verified.card.fields, level: .public, trust: .signed,
                              source: SolidarityService.source, seen: now, cardTimestamp: verified.card.issuedAt,
                              payload: Data(verified.card.text.utf8))
        let target: ContactStore
        if let store { target = store } else { target = try open() }
        do { return try target.store(contact, meeting: Meeting(at: now, how: .qr, event: event)) } catch { throw .store(error) }
    }
}
