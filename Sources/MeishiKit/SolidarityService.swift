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

    /// Names the identity's Solidarity DID in my meishi card (`x-same-as`, public), replacing any
    /// other, so the meishi cards I sign from now on prove the link the Solidarity card claims;
    /// returns the DID when the card changed (nil: it named it already, or there is no key yet).
    public static func linkCard(home: Home) throws(MeishiError) -> String? {
        guard let did = SolidarityKeyStore(home: home).storedDID() else { return nil }
        let cards = CardService(home: home)
        do {
            return try home.exclusively { () throws -> String? in
                var card = try cards.loadCard()
                if card.fields[.sameAs]?.map(\.value) == [did] { return nil }
                try card.set(.sameAs, did, level: .public)
                try cards.saveCard(card)
                return did
            }
        } catch let e as MeishiError { throw e } catch let e as CardError { throw .card(e) } catch { throw .cannotWrite(path: home.cardPath, reason: "\(error)") }
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
        // The DIDs its `sameAs` names, kept as the card's claim: with a meishi card naming this
        // DID back, the two are one contact (`ContactStore.store`).
        var fields = verified.card.fields
        if !verified.card.linkedDIDs.isEmpty { fields[.sameAs] = verified.card.linkedDIDs }
        let contact = Contact(did: verified.did, fields: fields, level: .public, trust: .signed,
                              source: SolidarityService.source, seen: now, cardTimestamp: verified.card.issuedAt,
                              payload: Data(verified.card.text.utf8))
        let target: ContactStore
        if let store { target = store } else { target = try open() }
        do { return try target.store(contact, meeting: Meeting(at: now, how: .qr, event: event)) } catch { throw .store(error) }
    }
}
