import Foundation
import MeishiCard
import MeishiStore

/// Passing on a verified contact's card with its original signature.
public enum ContactShare {
    /// The stored signed card of `c`, checked again; a third person's `meishi verify` or `scan`
    /// then checks the original signature (and stores it as `signed`, never `met`).
    public static func card(of c: Contact, now: Int64) throws(MeishiError) -> VerifiedCard {
        guard c.trust > .unsigned, let raw = c.payload else { throw .unsignedContact(id: c.id ?? 0, name: c.name ?? c.did) }
        // No skew limit: the card was checked when stored; only its signature matters here.
        let verifier = CardVerifier(maximumSkew: .max / 2, clock: { now })
        do { return try verifier.verify(Array(raw)) } catch { throw .storedCardInvalid(id: c.id ?? 0, error) }
    }
}
