import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore
import NIOCore

/// `meishi exchange`: runs the protocol with a peer and stores its card once both sides are done.
public struct ExchangeService: Sendable {
    /// Our own TCP port for `--listen` (IANA-unassigned; not LocalSend's 53317 nor KDE Connect's 1716).
    public static let defaultPort = 47_823
    /// How long each network step may take before the peer is dropped.
    public static let stepTimeoutSeconds: Int64 = 15

    public enum Endpoint: Sendable {
        case listen(host: String, port: Int)
        case dial(host: String, port: Int)
    }

    public struct Outcome: Sendable {
        public let contact: Contact
        public let stored: StoreOutcome
        public let code: String
        public let peerAddress: String
    }

    public let home: Home

    public init(home: Home) { self.home = home }

    /// The payload verifier of an exchange: everything `verify` checks, and a card no older than
    /// `maximumSkew` (it was signed for this meeting).
    public static func verifier(maximumSkew: Int64) -> @Sendable ([UInt8]) throws(PayloadError) -> ProximityPayload {
        { (raw: [UInt8]) throws(PayloadError) -> ProximityPayload in
            let now = Date()
            let card = try CardService.verify(raw, now: now, maximumSkew: maximumSkew)
            if card.ageSeconds > maximumSkew { throw .tooOld(seconds: card.ageSeconds) }
            return card.payload
        }
    }

    /// Runs one exchange. `confirmed` tells whether a person compared the code (trust `met`)
    /// or `--yes` skipped that (trust `signed`).
    public func run(endpoint: Endpoint, identity: Identity, card: Card, level: DisclosureLevel, only: Set<FieldName>?,
                    timeoutSeconds: Int64, maximumSkew: Int64, confirmedByPerson: Bool,
                    confirm: @escaping @Sendable (String) async -> Bool, log: @escaping @Sendable (String) -> Void,
                    listening: @escaping @Sendable (Int) -> Void) async throws(MeishiFailure) -> Outcome {
        let payload = try CardService.signedPayload(card: card, level: level, only: only, identity: identity, now: Date())
        // Fail before the network if the store cannot be opened.
        _ = try ContactsService(home: home).open()
        let signingKey = identity.signingKey
        let participant = ExchangeParticipant(card: { (payload, signingKey) }, verify: Self.verifier(maximumSkew: maximumSkew),
                                              confirmCode: confirm, log: log)
        let result: ExchangeResult
        do {
            switch endpoint {
            case .listen(let host, let port):
                result = try await ExchangeTransport.listen(host: host, port: port, timeout: .seconds(timeoutSeconds),
                                                           stepTimeout: .seconds(Self.stepTimeoutSeconds), participant: participant,
                                                           listening: listening)
            case .dial(let host, let port):
                result = try await ExchangeTransport.dial(host: host, port: port, stepTimeout: .seconds(min(timeoutSeconds, Self.stepTimeoutSeconds)),
                                                         participant: participant)
            }
        } catch {
            throw Self.failure(error)
        }
        let verified = VerifiedCard(payload: result.peerCard, raw: result.peerCard.canonicalJSON,
                                    ageSeconds: Int64(Date().timeIntervalSince1970) - result.peerCard.timestamp)
        let stored = try ContactsService(home: home).add(verified, trust: confirmedByPerson ? .met : .signed, source: "exchange", now: Date())
        return Outcome(contact: stored.contact, stored: stored, code: result.code, peerAddress: result.peerAddress)
    }

    static func failure(_ f: ExchangeFailure) -> MeishiFailure {
        let text = ExchangeTransport.describe(f)
        switch f {
        case .timedOut: return MeishiFailure(text + "; nothing was stored", hint: "start both sides within --timeout, or raise it", status: .timedOut)
        case .unreachable: return MeishiFailure(text, hint: "is 'meishi exchange --listen' running there, and the port open?", status: .unavailable)
        case .declinedLocally, .protocolFailure(.declinedByPeer):
            return MeishiFailure(text + "; nothing was stored on either side", status: .failure)
        case .protocolFailure: return MeishiFailure(text + "; nothing was stored", status: .dataError)
        case .connectionLost: return MeishiFailure(text + "; nothing was stored", status: .unavailable)
        case .io: return MeishiFailure(text, status: .failure)
        }
    }
}
