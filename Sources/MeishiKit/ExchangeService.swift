import Foundation
import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiStore
import NIOConcurrencyHelpers
import NIOCore

/// Peers found when several announce and nobody could pick one.
final class AmbiguityBox: Sendable {
    private let value = NIOLockedValueBox<[DiscoveredPeer]?>(nil)
    func set(_ p: [DiscoveredPeer]) { value.withLockedValue { $0 = p } }
    func get() -> [DiscoveredPeer]? { value.withLockedValue { $0 } }
}

/// `meishi exchange`: runs the protocol with a peer and stores its card once both sides are done.
public struct ExchangeService: Sendable {
    /// Our own TCP port for `--listen` (IANA-unassigned; not LocalSend's 53317 nor KDE Connect's 1716).
    public static let defaultPort = 47_823
    /// How long each network step may take before the peer is dropped.
    public static let stepTimeoutSeconds: Int64 = 15

    public enum Endpoint: Sendable {
        case listen(host: String?, port: Int)
        case dial(host: String, port: Int)
        /// Find the peer by multicast: by `code` when given, else the one other peer announcing.
        case discover(code: String?, alias: String?, interface: String?,
                      pick: @Sendable ([DiscoveredPeer]) -> DiscoveredPeer?)
    }

    /// How long to listen to announcements before deciding that exactly one peer is there.
    public static let discoveryWindow: Double = 1.0

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
        // Fail before the network if the store cannot be opened; store into it afterwards.
        let contacts = ContactsService(home: home)
        let store = try contacts.open()
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
                                                         waitFor: .seconds(timeoutSeconds), participant: participant)
            case .discover(let code, let alias, let interface, let pick):
                result = try await discover(code: code, alias: alias, interface: interface, pick: pick, timeoutSeconds: timeoutSeconds,
                                            participant: participant, listening: listening)
            }
        } catch let f as MeishiFailure {
            throw f
        } catch let f as ExchangeFailure {
            throw Self.failure(f)
        } catch {
            throw MeishiFailure("\(error)")
        }
        let verified = VerifiedCard(payload: result.peerCard, raw: result.peerCard.canonicalJSON,
                                    ageSeconds: Int64(Date().timeIntervalSince1970) - result.peerCard.timestamp)
        let stored = try contacts.add(verified, trust: confirmedByPerson ? .met : .signed, source: "exchange", now: Date(), in: store)
        return Outcome(contact: stored.contact, stored: stored, code: result.code, peerAddress: result.peerAddress)
    }

    /// Discovery, then the TCP exchange: the peer whose session id is smaller dials.
    func discover(code: String?, alias: String?, interface: String?, pick: @escaping @Sendable ([DiscoveredPeer]) -> DiscoveredPeer?,
                  timeoutSeconds: Int64, participant: ExchangeParticipant, listening: @escaping @Sendable (Int) -> Void) async throws -> ExchangeResult {
        let start = ExchangeTransport.now()
        let deadline = start + Double(timeoutSeconds)
        let server = try await ExchangeTransport.bind(host: nil, port: 0)
        let discovery = try await Discovery.start(tcpPort: server.port, code: code, alias: alias, interface: interface, log: participant.log)
        listening(server.port)
        let ambiguous = AmbiguityBox()
        let chosen = await discovery.run(until: deadline) { peers, now in
            if let code { return peers.first { $0.announcement.matches(code: code) } }
            guard now - start >= Self.discoveryWindow, !peers.isEmpty else { return nil }
            if peers.count == 1 { return peers[0] }
            if let p = pick(peers) { return p }
            ambiguous.set(peers)
            return peers[0]
        }
        if let several = ambiguous.get() {
            let list = several.map { "\($0.host) (\(TerminalText.sanitized($0.announcement.alias ?? "no alias")))" }.joined(separator: ", ")
            throw MeishiFailure("\(several.count) peers are announcing: \(list)", hint: "agree on a code and run 'meishi exchange --code CODE' on both sides",
                                status: .unavailable)
        }
        guard let peer = chosen else {
            throw MeishiFailure(code == nil ? "no other meishi announced itself on the network" : "no peer announced the same code",
                                hint: "is the other side running 'meishi exchange'? if multicast is blocked, use --listen and --peer HOST:PORT",
                                status: .timedOut)
        }
        let remaining = max(1, deadline - ExchangeTransport.now())
        if discovery.sessionID.lexicographicallyPrecedes(peer.announcement.sessionID) {
            try? await server.close()
            return try await ExchangeTransport.dial(peer.tcpAddress, label: "\(peer.host) port \(peer.announcement.port)",
                                                    stepTimeout: .seconds(Self.stepTimeoutSeconds), waitFor: .seconds(5),
                                                    introduce: discovery.sessionID, participant: participant)
        }
        return try await ExchangeTransport.serve(server, timeout: .milliseconds(Int64(remaining * 1000)),
                                                 stepTimeout: .seconds(Self.stepTimeoutSeconds), participant: participant, onlySession: peer.announcement.sessionID)
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
