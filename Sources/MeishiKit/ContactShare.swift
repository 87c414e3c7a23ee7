import Foundation
import MeishiCard
import MeishiStore

/// Passing on a verified contact's card with its original signature.
public enum ContactShare {
    /// The stored signed payload of `c`, checked again; a third person's `meishi verify` or
    /// `scan` then checks the original signature (and stores it as `signed`, never `met`).
    public static func payload(of c: Contact, now: Date) throws(MeishiFailure) -> ProximityPayload {
        guard c.trust > .unsigned, let raw = c.payload else {
            throw MeishiFailure("#\(c.id ?? 0) \(TerminalText.sanitized(c.name ?? c.did)) is unsigned: there is no signed card to pass on",
                                hint: "'meishi contacts export' writes it as a vCard", status: .dataError)
        }
        // No skew limit: the card was checked when stored; only its signature matters here.
        do { return try CardService.verify(Array(raw), now: now, maximumSkew: .max / 2).payload } catch {
            throw MeishiFailure("the stored card of #\(c.id ?? 0) no longer verifies: \(error.reason)", status: .dataError)
        }
    }
}
