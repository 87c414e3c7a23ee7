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
    /// Seconds of hearing nobody after which a run says so and names the way out (`--relay`).
    public static let quietAfter: Double = 5.0
    /// How long a dialer keeps retrying a refused connection: a discovered peer bound its listener
    /// before it announced, so a refusal means a stale or forged announcement; move on soon.
    static let dialWait: TimeAmount = .seconds(1)

    /// Finds the peer, then runs the exchange with it. `.listening` tells the TCP port once bound,
    /// and again when it serves anew after a lost pairing.
    ///
    /// Discovery only suggests whom to try; the PAKE or the people comparing digits authenticate.
    /// Without a code: the one peer heard (or picked by a person), dialled or served by the rule.
    /// With a code, every peer announcing its N is a candidate, and a replayed or forged
    /// announcement is one more: discovery keeps listening, this side serves the candidates that
    /// dial it and, at the same time, dials in turn the candidates it should dial, each failure
    /// leading to the next; each attempt abandoned after the code could be computed spends a guess.
    public static func exchange(alias: String?, interface: String?, timeoutSeconds: Int64, stepTimeout: TimeAmount,
                                pick: @escaping @Sendable ([DiscoveredPeer]) async -> DiscoveredPeer?, participant: ExchangeParticipant,
                                budget: GuessBudget) async throws(ExchangeFailure) -> ExchangeResult {
        let code = participant.code
        let start = ExchangeTransport.now()
        let deadline = start + Double(timeoutSeconds)
        var server = try await ExchangeTransport.bind(host: nil, port: 0)
        let port = server.port
        let discovery: Discovery
        do {
            discovery = try await Discovery.start(tcpPort: port, code: code, alias: alias, interface: interface,
                                                  events: participant.events)
        } catch {
            try? await server.close()
            throw error
        }
        participant.events(.listening(port: port))
        discovery.begin()
        // Several peers heard without a code: `pick` is asked once the wait has ended (it may ask a
        // person, which must not hold discovery's callback).
        let severalHeard = NIOLockedValueBox<[DiscoveredPeer]?>(nil)
        // Without a code, peers heard together are first checked for a TCP listener at their
        // announced port: a forged announcement (an alias copied) is dropped, not a reason to stop.
        let checked = NIOLockedValueBox<(alive: Set<[UInt8]>, dead: Set<[UInt8]>)>(([], []))
        var outcome: Result<ExchangeResult, ExchangeFailure>
        // A pairing lost after its code was computed releases the choice: that peer is dropped and
        // discovery chooses again (the person restarts meishi on the other machine).
        var lostOne = false
        // Said once when discovery has heard nobody for `quietAfter` seconds (issue 25).
        let saidQuiet = NIOLockedValueBox(false)
        choosing: while true {
            var chosen: DiscoveredPeer?
            severalHeard.withLockedValue { $0 = nil }
            while true {
                let unchecked = NIOLockedValueBox<[DiscoveredPeer]>([])
                chosen = await discovery.waitForChoice(until: deadline, alsoAt: [start + quietAfter] + (code == nil ? [start + window] : [])) { heard, now in
                    if heard.isEmpty, now - start >= quietAfter, saidQuiet.withLockedValue({ s in defer { s = true }; return !s }) {
                        participant.events(.nobodyFound)
                    }
                    let (alive, dead) = checked.withLockedValue { $0 }
                    // A table's members pair among themselves (§5.7), and a peer announcing a code's
                    // number pairs only with that code: neither is a peer of a run without one.
                    let peers = heard.filter {
                        !dead.contains($0.announcement.sessionID) && !$0.announcement.table && (code != nil || $0.announcement.nameplate == nil)
                    }
                    if code == nil, now - start >= window, peers.count > 1 {
                        let new = peers.filter { !alive.contains($0.announcement.sessionID) }
                        if !new.isEmpty {
                            unchecked.withLockedValue { $0 = new }
                            return new[0]  // ends the wait: check them, then choose again
                        }
                    }
                    return choose(peers, code: code, elapsed: now - start) { several in severalHeard.withLockedValue { $0 = several } }
                }
                let new = unchecked.withLockedValue { $0 }
                guard !new.isEmpty else { break }
                let refused = await unreachable(new)
                checked.withLockedValue { c in
                    c.dead.formUnion(refused.map(\.announcement.sessionID))
                    c.alive.formUnion(new.map(\.announcement.sessionID).filter { id in !refused.contains { $0.announcement.sessionID == id } })
                }
                for peer in refused {
                    participant.events(.ignoredPeer(host: peer.host, port: Int(peer.announcement.port), alias: peer.announcement.alias))
                }
            }
            var ambiguous: [DiscoveredPeer]?
            if let several = severalHeard.withLockedValue({ $0 }) {
                if let picked = await pick(several) { chosen = picked } else { ambiguous = several }
            }
            if let several = ambiguous {
                // The others heard us too and may still be checking who listens: stay reachable (and
                // announced) while they do, or they would drop us as gone and pair among themselves.
                try? await Task.sleep(for: .milliseconds(Int64((window + probeWait) * 1000)))
                outcome = .failure(.ambiguous(several))
            } else if let chosen {
                if let code {
                    outcome = await withCandidates(code: code, discovery: discovery, server: server, deadline: deadline, stepTimeout: stepTimeout,
                                                   participant: participant, budget: budget)
                } else {
                    let lost = NIOLockedValueBox(false)
                    outcome = await with(chosen, discovery: discovery, server: server, deadline: deadline, stepTimeout: stepTimeout,
                                         participant: participant, budget: budget, pairingLost: { lost.withLockedValue { $0 = true } })
                    // Dialling, the chosen peer was gone (refused) or closed on us before the handshake:
                    // it left, or it chose someone else. Drop it and choose again among the others heard.
                    if case .failure(let failure) = outcome, dials(own: discovery.sessionID, peer: chosen.announcement.sessionID),
                       Self.choiceLost(failure), ExchangeTransport.now() < deadline {
                        checked.withLockedValue { _ = $0.dead.insert(chosen.announcement.sessionID) }
                        lostOne = true
                        participant.events(.chosenPeerGone(host: chosen.host, alias: chosen.announcement.alias, failure: failure))
                        continue choosing
                    }
                    // Serving ended with the pairing: listen again on the announced port.
                    if lost.withLockedValue({ $0 }), ExchangeTransport.now() < deadline,
                       let again = try? await ExchangeTransport.bind(host: nil, port: port) {
                        checked.withLockedValue { _ = $0.dead.insert(chosen.announcement.sessionID) }
                        server = again
                        lostOne = true
                        participant.events(.stillListening)
                        participant.events(.listening(port: port))
                        continue choosing
                    }
                }
            } else {
                outcome = .failure(lostOne ? .timedOut(.noPeerCompleted) : .noPeer(withCode: code != nil))
            }
            break
        }
        // Stopping discovery and the listener takes event-loop trips: a pairing that completed
        // returns at once, its card is stored meanwhile, and they stop in the background, as
        // discovery's lingering announcements already do (make bench: 0.4 ms of a pairing).
        let stopping = Task {
            await discovery.stop()
            try? await server.close()
        }
        if case .failure = outcome { await stopping.value }
        return try outcome.get()
    }

    /// Without a code: the one chosen peer, dialled or served by the session-id rule.
    /// Serving, a pairing lost after its code was computed ends it (`pairingLost` is told).
    static func with(_ peer: DiscoveredPeer, discovery: Discovery, server: ExchangeTransport.Server, deadline: Double, stepTimeout: TimeAmount,
                     participant: ExchangeParticipant, budget: GuessBudget,
                     pairingLost: @escaping @Sendable () -> Void) async -> Result<ExchangeResult, ExchangeFailure> {
        let own = discovery.sessionID, id = peer.announcement.sessionID
        do throws(ExchangeFailure) {
            if dials(own: own, peer: id) {
                return .success(try await ExchangeTransport.dial(peer.tcpAddress, label: "\(peer.host) port \(peer.announcement.port)",
                                                                 stepTimeout: stepTimeout, waitFor: dialWait, introduce: (own, id),
                                                                 budget: budget, participant: participant))
            }
            let remaining = max(1, deadline - ExchangeTransport.now())
            return .success(try await ExchangeTransport.serve(server, timeout: .milliseconds(Int64(remaining * 1000)), stepTimeout: stepTimeout,
                                                              participant: participant, budget: budget, onlySessions: (own, { [id] }),
                                                              pairingLost: pairingLost))
        } catch {
            return .failure(error)
        }
    }

    /// With a code: serve the candidates that dial us while dialling the others in turn; the
    /// first exchange that completes wins. A person's decision or a spent budget ends both.
    static func withCandidates(code: ExchangeCode, discovery: Discovery, server: ExchangeTransport.Server, deadline: Double,
                               stepTimeout: TimeAmount, participant: ExchangeParticipant,
                               budget: GuessBudget) async -> Result<ExchangeResult, ExchangeFailure> {
        let own = discovery.sessionID
        @Sendable func candidates() -> [DiscoveredPeer] {
            discovery.currentPeers(now: ExchangeTransport.now()).filter { $0.announcement.matches(code: code) && !$0.announcement.table }
        }
        let remaining = max(1, deadline - ExchangeTransport.now())
        return await withTaskGroup(of: Result<ExchangeResult, ExchangeFailure>.self) { group in
            group.addTask {
                do throws(ExchangeFailure) {
                    return .success(try await ExchangeTransport.serve(
                        server, timeout: .milliseconds(Int64(remaining * 1000)), stepTimeout: stepTimeout, participant: participant,
                        budget: budget, onlySessions: (own, { candidates().filter { !dials(own: own, peer: $0.announcement.sessionID) }
                            .map(\.announcement.sessionID) }), othersPending: { candidates().count > 1 }))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                await dialInTurn(candidates, own: own, code: code, deadline: deadline, stepTimeout: stepTimeout,
                                 participant: participant, budget: budget)
            }
            var failures: [ExchangeFailure] = []
            for await result in group {
                switch result {
                case .success:
                    group.cancelAll()
                    try? await server.close()
                    return result
                case .failure(let f):
                    switch f {
                    case .declinedLocally, .protocolFailure(.declinedByPeer), .protocolFailure(.codesDoNotMatch), .tooManyGuesses,
                         .unanswered, .protocolFailure(.peerDidNotAnswer):
                        group.cancelAll()
                        try? await server.close()
                        return result
                    default:
                        failures.append(f)
                    }
                }
            }
            // Both gave up: the server's word (timed out) says more than the last dial's.
            return .failure(failures.first { if case .timedOut = $0 { true } else { false } } ?? failures.first ?? .noPeer(withCode: true))
        }
    }

    /// The peers among `peers` at whose announced TCP port nothing accepts a connection within
    /// `probeWait` (checked at once; a connection that is accepted is closed unused).
    static func unreachable(_ peers: [DiscoveredPeer]) async -> [DiscoveredPeer] {
        await withTaskGroup(of: DiscoveredPeer?.self) { probes in
            for peer in peers {
                probes.addTask {
                    let until = ExchangeTransport.now() + probeWait
                    switch await ExchangeTransport.connect(to: peer.tcpAddress, until: until, attemptTimeout: { _ in .milliseconds(Int64(probeWait * 1000)) },
                                                           refusedGrace: probeWait / 2, pause: .milliseconds(50)) {
                    case .success(let connection):
                        try? await connection.executeThenClose { _, _ in }
                        return nil
                    case .failure:
                        return peer
                    }
                }
            }
            return await probes.reduce(into: []) { if let p = $1 { $0.append(p) } }
        }
    }

    /// How long a peer heard among others has to accept a connection at its announced port.
    static let probeWait = 1.0

    /// Dials at once to this many candidates, each at another address.
    static let parallelDials = 8

    /// Dials the candidates this side should dial (session-id rule), up to `parallelDials` at once
    /// and one per source address at a time, each address's first-heard candidate before its later
    /// ones: session ids forged from a few addresses cannot queue the honest peer behind them. The
    /// first exchange that completes wins; a person's decision or a spent budget ends the others.
    static func dialInTurn(_ candidates: @escaping @Sendable () -> [DiscoveredPeer], own: [UInt8], code: ExchangeCode, deadline: Double,
                           stepTimeout: TimeAmount, participant: ExchangeParticipant,
                           budget: GuessBudget) async -> Result<ExchangeResult, ExchangeFailure> {
        enum Event: Sendable {
            case tick
            case done(host: String, id: [UInt8], Result<ExchangeResult, ExchangeFailure>)
        }
        return await withTaskGroup(of: Event.self) { attempts in
            var tried = Set<[UInt8]>(), busy = Set<String>()
            var last: ExchangeFailure = .noPeer(withCode: true)
            var ticking = false
            while true {
                let now = ExchangeTransport.now()
                if Task.isCancelled || (busy.isEmpty && now >= deadline) {
                    attempts.cancelAll()
                    return .failure(last)
                }
                for peer in order(candidates().filter { dials(own: own, peer: $0.announcement.sessionID) }, skipping: tried)
                where busy.count < parallelDials && !busy.contains(peer.host) && now < deadline {
                    tried.insert(peer.announcement.sessionID)
                    busy.insert(peer.host)
                    attempts.addTask {
                        do throws(ExchangeFailure) {
                            return .done(host: peer.host, id: peer.announcement.sessionID, .success(try await ExchangeTransport.dial(
                                peer.tcpAddress, label: "\(peer.host) port \(peer.announcement.port)", stepTimeout: stepTimeout,
                                waitFor: dialWait, introduce: (own, peer.announcement.sessionID), budget: budget, participant: participant)))
                        } catch {
                            return .done(host: peer.host, id: peer.announcement.sessionID, .failure(error))
                        }
                    }
                }
                if !ticking {
                    ticking = true
                    attempts.addTask {
                        try? await Task.sleep(for: .milliseconds(20))
                        return .tick
                    }
                }
                guard case .done(let host, let id, let result)? = await attempts.next() else {
                    ticking = false
                    continue
                }
                busy.remove(host)
                switch result {
                case .success:
                    attempts.cancelAll()
                    return result
                case .failure(let error):
                    switch error {
                    case .declinedLocally, .protocolFailure(.declinedByPeer), .tooManyGuesses, .unanswered, .protocolFailure(.peerDidNotAnswer):
                        attempts.cancelAll()
                        return result
                    case .protocolFailure(.codesDoNotMatch) where !candidates().contains(where: { $0.announcement.sessionID != id }):
                        // The only peer announcing this N: most likely one side mistyped the code.
                        attempts.cancelAll()
                        return result
                    default:
                        last = error
                        let tries: Int? = if case .protocolFailure(.codesDoNotMatch) = error { budget.failed } else { nil }
                        participant.events(.triedNextCandidate(failure: error, triesUsed: tries, nameplate: code.nameplate))
                    }
                }
            }
        }
    }

    /// `peers` not yet tried, each address's first-heard before any address's second.
    static func order(_ peers: [DiscoveredPeer], skipping tried: Set<[UInt8]>) -> [DiscoveredPeer] {
        var rank: [String: Int] = [:]
        let ranked = peers.sorted { $0.firstSeen < $1.firstSeen }.map { peer in
            defer { rank[peer.host, default: 0] += 1 }
            return (rank: rank[peer.host, default: 0], peer: peer)
        }
        return ranked.filter { !tried.contains($0.peer.announcement.sessionID) }
            .sorted { ($0.rank, $0.peer.firstSeen) < ($1.rank, $1.peer.firstSeen) }.map(\.peer)
    }

    /// The peer to pair with among those heard so far, or nil to keep listening. With several
    /// and no code, `several` is told and the first is returned to end the wait: which one (a
    /// person's choice through `pick`, or none) is decided after it.
    static func choose(_ peers: [DiscoveredPeer], code: ExchangeCode?, elapsed: Double,
                       several: ([DiscoveredPeer]) -> Void) -> DiscoveredPeer? {
        if let code { return peers.first { $0.announcement.matches(code: code) } }
        guard elapsed >= window, !peers.isEmpty else { return nil }
        if peers.count == 1 { return peers[0] }
        several(peers)
        return peers[0]
    }

    /// Whether a dial to the chosen peer failed the way a peer that left or chose someone else
    /// makes it fail, before any code was shown: nothing listens there, or the connection ended
    /// before the handshake. (A pairing lost later still ends a dialer's run.)
    static func choiceLost(_ failure: ExchangeFailure) -> Bool {
        switch failure {
        case .unreachable(.cannotConnect), .connectionLost(.closed(waiting: .handshake)), .connectionLost(.timedOut(waiting: .handshake)): true
        default: false
        }
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
    /// Find the peer by multicast: by the code's N when the participant has a code, else the one
    /// other peer announcing; `pick` may choose among several (nil: nobody chose).
    case discover(alias: String?, interface: String?, pick: @Sendable ([DiscoveredPeer]) async -> DiscoveredPeer?)
    /// Meet through a magic-wormhole mailbox server by the code's nameplate and run the session
    /// through its transit relay (docs/PROTOCOL.md §5.8); needs a code.
    case relay(RelayServers)
}

extension ExchangeTransport {
    /// Our own TCP port for `--listen` (IANA-unassigned; not LocalSend's 53317 nor KDE Connect's 1716).
    public static let defaultPort = 47_823
    /// How long each network step may take before the peer is dropped.
    public static let stepTimeoutSeconds: Int64 = 15

    /// Runs one exchange with the peer `endpoint` names, within `timeoutSeconds`.
    public static func exchange(_ endpoint: ExchangeEndpoint, timeoutSeconds: Int64,
                                participant: ExchangeParticipant) async throws(ExchangeFailure) -> ExchangeResult {
        let step = TimeAmount.seconds(stepTimeoutSeconds)
        let budget = GuessBudget()
        switch endpoint {
        case .listen(let host, let port):
            return try await listen(host: host, port: port, timeout: .seconds(timeoutSeconds), stepTimeout: step,
                                    participant: participant, budget: budget)
        case .dial(let host, let port):
            return try await dial(host: host, port: port, stepTimeout: .seconds(min(timeoutSeconds, stepTimeoutSeconds)),
                                  waitFor: .seconds(timeoutSeconds), participant: participant)
        case .discover(let alias, let interface, let pick):
            return try await Rendezvous.exchange(alias: alias, interface: interface, timeoutSeconds: timeoutSeconds,
                                                 stepTimeout: step, pick: pick, participant: participant, budget: budget)
        case .relay(let servers):
            return try await Relay.exchange(servers, timeoutSeconds: timeoutSeconds, stepTimeout: step, participant: participant,
                                            budget: budget)
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
