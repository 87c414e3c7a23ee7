import MeishiCard
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The discovery rules of docs/PROTOCOL.md §5.5: which announcing peer to pair with, and who dials.
///
/// With a code, the first peer whose tag matches it. Without one, wait `window` seconds; then the
/// only peer heard, or the one `pick` chooses among several (a person asked on a terminal), or
/// give up as ambiguous. The peer whose session id sorts first dials; the other serves only a
/// connection that introduces the chosen session id.
public enum Rendezvous {
    /// How long to listen to announcements before deciding that exactly one peer is there.
    public static let window: Double = 1.0
    /// How long a dialer keeps retrying a refused connection: a discovered peer bound its listener
    /// before it announced, so a refusal means a stale or forged announcement; move on soon.
    static let dialWait: TimeAmount = .seconds(1)

    /// Finds the peer, then runs the exchange with it. `listening` reports the TCP port once bound.
    ///
    /// Discovery only suggests whom to try; the code comparison authenticates. With a code, every
    /// peer announcing it is a candidate (a replayed or re-addressed announcement adds one): this
    /// side dials the candidates it should dial in turn, a failed one leading to the next, then
    /// serves the others; each attempt abandoned after the code was computed spends a guess.
    public static func exchange(code: String?, alias: String?, interface: String?, timeoutSeconds: Int64, stepTimeout: TimeAmount,
                                pick: @escaping @Sendable ([DiscoveredPeer]) -> DiscoveredPeer?, participant: ExchangeParticipant,
                                budget: GuessBudget, listening: @Sendable (Int) -> Void) async throws(ExchangeFailure) -> ExchangeResult {
        let start = ExchangeTransport.now()
        let deadline = start + Double(timeoutSeconds)
        let server = try await ExchangeTransport.bind(host: nil, port: 0)
        let discovery: Discovery
        do {
            discovery = try await Discovery.start(tcpPort: server.port, code: code, alias: alias, interface: interface, log: participant.log)
        } catch {
            try? await server.close()
            throw error
        }
        listening(server.port)
        let ambiguous = NIOLockedValueBox<[DiscoveredPeer]?>(nil)
        let chosen = await discovery.run(until: deadline) { peers, now in
            choose(peers, code: code, elapsed: now - start, pick: pick) { several in ambiguous.withLockedValue { $0 = several } }
        }
        if let several = ambiguous.withLockedValue({ $0 }) {
            try? await server.close()
            throw .ambiguous(several)
        }
        guard let first = chosen else {
            try? await server.close()
            throw .noPeer(withCode: code != nil)
        }
        var candidates = [first]
        if let code {
            candidates += discovery.currentPeers(now: ExchangeTransport.now())
                .filter { $0.announcement.sessionID != first.announcement.sessionID && $0.announcement.matches(code: code) }
        }
        let own = discovery.sessionID
        let toDial = candidates.filter { dials(own: own, peer: $0.announcement.sessionID) }
        let toServe = candidates.filter { !dials(own: own, peer: $0.announcement.sessionID) }.map(\.announcement.sessionID)
        var lastFailure: ExchangeFailure = .noPeer(withCode: code != nil)
        for (n, peer) in toDial.enumerated() {
            do {
                let result = try await ExchangeTransport.dial(peer.tcpAddress, label: "\(peer.host) port \(peer.announcement.port)",
                                                              stepTimeout: stepTimeout, waitFor: dialWait, introduce: own, budget: budget,
                                                              participant: participant)
                try? await server.close()
                return result
            } catch {
                switch error {
                case .declinedLocally, .protocolFailure(.declinedByPeer), .tooManyGuesses:
                    try? await server.close()
                    throw error
                default:
                    lastFailure = error
                    if n + 1 < toDial.count || !toServe.isEmpty {
                        participant.log("\(ExchangeTransport.describe(error)); trying the next peer announcing the code")
                    }
                }
            }
        }
        guard !toServe.isEmpty else {
            try? await server.close()
            throw lastFailure
        }
        let remaining = max(1, deadline - ExchangeTransport.now())
        return try await ExchangeTransport.serve(server, timeout: .milliseconds(Int64(remaining * 1000)), stepTimeout: stepTimeout,
                                                 participant: participant, budget: budget, onlySessions: { toServe })
    }

    /// The peer to pair with among those heard so far, or nil to keep listening. With several
    /// and no choice, `ambiguous` is told and the first is returned to end the wait.
    static func choose(_ peers: [DiscoveredPeer], code: String?, elapsed: Double, pick: ([DiscoveredPeer]) -> DiscoveredPeer?,
                       ambiguous: ([DiscoveredPeer]) -> Void) -> DiscoveredPeer? {
        if let code { return peers.first { $0.announcement.matches(code: code) } }
        guard elapsed >= window, !peers.isEmpty else { return nil }
        if peers.count == 1 { return peers[0] }
        if let p = pick(peers) { return p }
        ambiguous(peers)
        return peers[0]
    }

    /// Whether this side dials: its session id sorts before the peer's.
    static func dials(own: [UInt8], peer: [UInt8]) -> Bool {
        own.lexicographicallyPrecedes(peer)
    }
}

/// Where the peer of an exchange is found.
public enum ExchangeEndpoint: Sendable {
    /// Wait for the peer on `port` (0: any free port).
    case listen(host: String?, port: Int)
    /// Connect to a listening peer.
    case dial(host: String, port: Int)
    /// Find the peer by multicast: by `code` when given, else the one other peer announcing;
    /// `pick` may choose among several (nil: nobody chose).
    case discover(code: String?, alias: String?, interface: String?, pick: @Sendable ([DiscoveredPeer]) -> DiscoveredPeer?)
}

extension ExchangeTransport {
    /// Our own TCP port for `--listen` (IANA-unassigned; not LocalSend's 53317 nor KDE Connect's 1716).
    public static let defaultPort = 47_823
    /// How long each network step may take before the peer is dropped.
    public static let stepTimeoutSeconds: Int64 = 15

    /// Runs one exchange with the peer `endpoint` names, within `timeoutSeconds`.
    public static func exchange(_ endpoint: ExchangeEndpoint, timeoutSeconds: Int64, participant: ExchangeParticipant,
                                listening: @escaping @Sendable (Int) -> Void) async throws(ExchangeFailure) -> ExchangeResult {
        let step = TimeAmount.seconds(stepTimeoutSeconds)
        let budget = GuessBudget()
        switch endpoint {
        case .listen(let host, let port):
            return try await listen(host: host, port: port, timeout: .seconds(timeoutSeconds), stepTimeout: step,
                                    participant: participant, budget: budget, listening: listening)
        case .dial(let host, let port):
            return try await dial(host: host, port: port, stepTimeout: .seconds(min(timeoutSeconds, stepTimeoutSeconds)),
                                  waitFor: .seconds(timeoutSeconds), participant: participant)
        case .discover(let code, let alias, let interface, let pick):
            return try await Rendezvous.exchange(code: code, alias: alias, interface: interface, timeoutSeconds: timeoutSeconds,
                                                 stepTimeout: step, pick: pick, participant: participant, budget: budget,
                                                 listening: listening)
        }
    }
}

extension ExchangeTransport {
    /// This machine's addresses another person could dial: IPv4 first, then global IPv6, no loopback.
    public static func localAddresses() -> [String] {
        guard let devices = try? System.enumerateDevices() else { return [] }
        var v4: [String] = [], v6: [String] = []
        for d in devices {
            guard let a = d.address, let ip = a.ipAddress else { continue }
            switch a {
            case .v4: if !ip.hasPrefix("127.") { v4.append(ip) }
            case .v6: if ip != "::1", !ip.lowercased().hasPrefix("fe80") { v6.append(ip) }
            default: break
            }
        }
        return Array(Set(v4)).sorted() + Array(Set(v6)).sorted()
    }
}
