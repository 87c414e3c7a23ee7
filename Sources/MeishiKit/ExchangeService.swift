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
        /// The 6-digit code shown; nil when `--code` was confirmed by the PAKE.
        public let code: String?
        public let peerAddress: String
        /// How the session was authenticated.
        public let authentication: Authentication
    }

    /// What stood between the peers and a machine in the middle.
    public enum Authentication: String, Sendable {
        /// Both typed the same code and the PAKE confirmed it: trust `met`.
        case code
        /// A person compared the 6 digits: trust `met`.
        case digits
        /// Nobody compared anything (`--yes` without a code): trust `signed`.
        case none
    }

    public let home: Home

    public init(home: Home) { self.home = home }

    /// Runs one exchange. With `code`, the PAKE authenticates the session (trust `met`); without,
    /// `confirmedByPerson` tells whether a person compared the digits (trust `met`) or `--yes`
    /// skipped that (trust `signed`). Our card is signed when it is about to be sent; the peer's
    /// card is checked against `clock` with `maximumSkew` both ways.
    public func run(endpoint: ExchangeEndpoint, code: ExchangeCode?, identity: Identity, card: Card, level: DisclosureLevel, only: Set<FieldName>?,
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
            verifier: CardVerifier(maximumSkew: maximumSkew, maximumAge: maximumSkew, clock: clock), code: code,
            confirmCode: confirm, log: log)
        let result: ExchangeResult
        do {
            result = try await ExchangeTransport.exchange(endpoint, timeoutSeconds: timeoutSeconds, participant: participant,
                                                          listening: listening)
        } catch {
            throw .exchange(error)
        }
        let authentication: Authentication = result.code == nil ? .code : (confirmedByPerson ? .digits : .none)
        let stored = try contacts.add(result.peerCard, trust: authentication == .none ? .signed : .met, source: "exchange", now: clock(),
                                      in: store)
        return Outcome(contact: stored.contact, stored: stored, code: result.code, peerAddress: result.peerAddress,
                       authentication: authentication)
    }
}
