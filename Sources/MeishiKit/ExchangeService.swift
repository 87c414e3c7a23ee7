import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore

/// `meishi exchange`: runs the protocol with a peer and stores its card once both sides are done.
public struct ExchangeService: Sendable {
    public struct Outcome: Sendable {
        public let contact: Contact
        public let stored: StoreOutcome
        public let code: String
        public let peerAddress: String
    }

    public let home: Home

    public init(home: Home) { self.home = home }

    /// Runs one exchange. `confirmedByPerson` tells whether a person compared the code (trust
    /// `met`) or `--yes` skipped that (trust `signed`). Our card is signed when it is about to be
    /// sent; the peer's card is checked against `clock` with `maximumSkew` both ways.
    public func run(endpoint: ExchangeEndpoint, identity: Identity, card: Card, level: DisclosureLevel, only: Set<FieldName>?,
                    timeoutSeconds: Int64, maximumSkew: Int64, confirmedByPerson: Bool, clock: @escaping @Sendable () -> Int64,
                    confirm: @escaping @Sendable (String) async -> Bool, log: @escaping @Sendable (String) -> Void,
                    listening: @escaping @Sendable (Int) -> Void) async throws(MeishiError) -> Outcome {
        // Fail before the network if the share or the store cannot be had; store into it afterwards.
        _ = try CardService.share(card, level: level, only: only)
        let contacts = ContactsService(home: home)
        let store = try contacts.open()
        let participant = ExchangeParticipant(
            card: {
                (try CardService.sign(card, level: level, only: only, identity: identity, now: clock()), identity.signingKey)
            },
            verifier: CardVerifier(maximumSkew: maximumSkew, maximumAge: maximumSkew, clock: clock),
            confirmCode: confirm, log: log)
        let result: ExchangeResult
        do {
            result = try await ExchangeTransport.exchange(endpoint, timeoutSeconds: timeoutSeconds, participant: participant,
                                                          listening: listening)
        } catch {
            throw .exchange(error)
        }
        let stored = try contacts.add(result.peerCard, trust: confirmedByPerson ? .met : .signed, source: "exchange", now: clock(),
                                      in: store)
        return Outcome(contact: stored.contact, stored: stored, code: result.code, peerAddress: result.peerAddress)
    }
}
