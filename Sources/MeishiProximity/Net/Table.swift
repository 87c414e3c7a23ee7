import MeishiCard
import MeishiText
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Why a table run ended (docs/PROTOCOL.md §5.7).
public enum TableEnd: String, Sendable {
    /// `--expect N` people (this one included) are in.
    case expected
    /// The person ended it (Enter or Ctrl-D).
    case stopped
    /// `--timeout` passed.
    case timedOut
    /// Failed pairings used every try: someone may be guessing the code.
    case triesSpent
}

/// A pairing of a table that did not complete.
public struct TableFailure: Sendable {
    /// Where the other side was: its address as people read it.
    public let peer: String
    public let failure: ExchangeFailure
    /// It failed after the code could be tested, so it used one of the run's tries.
    public let usedATry: Bool

    public init(peer: String, failure: ExchangeFailure, usedATry: Bool) {
        self.peer = peer
        self.failure = failure
        self.usedATry = usedATry
    }
}

/// What a table run did, besides the members it stored (handed over as each joined).
public struct TableOutcome: Sendable {
    public let ended: TableEnd
    /// Members who completed a pairing with this one.
    public let joined: Int
    /// Pairings that did not complete and were not completed later (by the same member).
    public let failures: [TableFailure]
    /// Failed pairings that used a try, of `GuessBudget.allowed`.
    public let triesUsed: Int
}

/// What the application hears while a table runs.
public struct TableEvents: Sendable {
    /// A member completed a pairing: its card verified and acknowledged both ways (to be stored).
    public var joined: @Sendable (ExchangeResult) async -> Void
    /// A pairing failed after the code could be tested, as it happens, with the tries used so far.
    public var failed: @Sendable (TableFailure, Int) -> Void
    /// Returns when the person ends the table (never, without a terminal).
    public var stop: @Sendable () async -> Void

    public init(joined: @escaping @Sendable (ExchangeResult) async -> Void, failed: @escaping @Sendable (TableFailure, Int) -> Void,
                stop: @escaping @Sendable () async -> Void) {
        self.joined = joined
        self.failed = failed
        self.stop = stop
    }
}

/// A table (`meishi exchange --table`, docs/PROTOCOL.md §5.7): everyone who holds one code pairs
/// with everyone else, one `ExchangeSession` per pair on one connection, dialled by the member
/// whose session id sorts first. Members announce the code's N with the table flag; a member that
/// joins late hears the others at once (its first announcements ask to be answered) and pairs
/// with each by the same rule.
public enum Table {
    /// Pairings dialled at once, each to another address.
    static let parallelDials = 8
    /// Attempts at one member that failed before the code could be tested (its listener was busy,
    /// the connection was lost), each a second after the last.
    static let attemptsPerMember = 3
    /// How long a table that ended with `--expect` reached or by its person lets the pairings in
    /// progress complete (starting none): cut, each would cost the member at the other end a try.
    static let finishingGrace = 3.0

    /// The members' pairing state, shared by the dialling and the serving side.
    final class Members: Sendable {
        private struct State {
            var joined: Set<[UInt8]> = []
            var busy: Set<[UInt8]> = []
            /// Failed attempts (before the code could be tested) and when the last ended.
            var attempts: [[UInt8]: (count: Int, at: Double)] = [:]
            /// Given up: a pairing that failed after the code was tested is not tried again.
            var closed: Set<[UInt8]> = []
            var failures: [[UInt8]: TableFailure] = [:]
            var anonymous: [TableFailure] = []
            /// Every member heard announcing the table, with the address heard.
            var heard: [[UInt8]: String] = [:]
        }
        private let state = NIOLockedValueBox(State())

        var joinedCount: Int { state.withLockedValue { $0.joined.count } }

        /// Whether a pairing with `id` may start now (none is in progress or done, it is not given up).
        func isOpen(_ id: [UInt8], now: Double) -> Bool {
            state.withLockedValue { s in
                guard !s.joined.contains(id), !s.busy.contains(id), !s.closed.contains(id) else { return false }
                guard let a = s.attempts[id] else { return true }
                return a.count < Table.attemptsPerMember && now - a.at >= 1
            }
        }

        func begin(_ id: [UInt8]) -> Bool {
            state.withLockedValue { s in s.busy.insert(id).inserted && !s.joined.contains(id) }
        }

        /// A pairing with `id` completed: an earlier failure that used no try was only a false start.
        func joined(_ id: [UInt8]) {
            state.withLockedValue { s in
                s.busy.remove(id)
                s.joined.insert(id)
                if s.failures[id]?.usedATry == false { s.failures[id] = nil }
            }
        }

        /// A pairing failed. Only the dialer's failures decide whether to try `id` again (`dialled`):
        /// anyone can introduce a member's session id to its listener, and must not close the pair by that.
        func failed(_ id: [UInt8]?, _ failure: TableFailure, dialled: Bool, now: Double) {
            state.withLockedValue { s in
                guard let id else { return s.anonymous.append(failure) }
                if dialled { s.busy.remove(id) }
                guard !s.joined.contains(id) || failure.usedATry else { return }
                if s.failures[id]?.usedATry != true || failure.usedATry {
                    if let earlier = s.failures[id], earlier.usedATry { s.anonymous.append(earlier) }
                    s.failures[id] = failure
                }
                guard dialled else { return }
                let n = (s.attempts[id]?.count ?? 0) + 1
                s.attempts[id] = (n, now)
                if failure.usedATry || n >= Table.attemptsPerMember { s.closed.insert(id) }
            }
        }

        func heard(_ peers: [DiscoveredPeer]) {
            state.withLockedValue { s in for p in peers where s.heard[p.announcement.sessionID] == nil { s.heard[p.announcement.sessionID] = p.readableHost } }
        }

        /// Failed pairings, then each member heard that neither paired nor failed (it left, or was never reached).
        var failures: [TableFailure] {
            state.withLockedValue { s in
                let silent = s.heard.filter { s.failures[$0.key] == nil && !s.joined.contains($0.key) }.values.sorted()
                return Array(s.failures.values) + s.anonymous + silent.map {
                    TableFailure(peer: $0, failure: .unreachable(.tableMemberNeverPaired), usedATry: false)
                }
            }
        }
    }

    /// Runs a table with `participant` (its code and `table` set) until `expect` members (this one
    /// included) are in, the person stops it, `timeoutSeconds` pass, or failed pairings use every
    /// try. Stored members stay stored whatever ends it.
    public static func run(alias: String?, interface: String?, expect: Int?, timeoutSeconds: Int64, participant: ExchangeParticipant,
                           events: TableEvents) async throws(ExchangeFailure) -> TableOutcome {
        guard let code = participant.code, participant.table else { preconditionFailure("a table needs a code") }
        let start = ExchangeTransport.now()
        let deadline = start + Double(timeoutSeconds)
        let server = try await ExchangeTransport.bind(host: nil, port: 0)
        let discovery: Discovery
        do {
            discovery = try await Discovery.start(tcpPort: server.port, code: code, alias: alias, interface: interface, table: true,
                                                  events: participant.events)
        } catch {
            try? await server.close()
            throw error
        }
        participant.events(.listening(port: server.port))
        discovery.begin()
        let own = discovery.sessionID
        let budget = GuessBudget(givesBack: true)
        let members = Members()
        let step = TimeAmount.seconds(ExchangeTransport.stepTimeoutSeconds)
        @Sendable func heard() -> [DiscoveredPeer] {
            discovery.currentPeers(now: ExchangeTransport.now()).filter { $0.announcement.table && $0.announcement.matches(code: code) }
        }
        let (ends, ending) = AsyncStream.makeStream(of: TableEnd.self)
        // Once the table ends: no pairing starts; those `inFlight` may complete (`finishingGrace`).
        let closing = NIOLockedValueBox(false)
        let inFlight = NIOLockedValueBox(0)
        @Sendable func settle(_ attempt: Result<ExchangeResult, ExchangeFailure>, id: [UInt8]?, dialled: Bool, address: String,
                              revealed: Bool) async {
            switch attempt {
            case .success(let result):
                if let id { members.joined(id) }
                await events.joined(result)
                if let expect, members.joinedCount + 1 >= expect { ending.yield(.expected) }
            case .failure(let error):
                if case .tooManyGuesses = error {
                    // Refused before it revealed anything: every try is used.
                    members.failed(id, TableFailure(peer: address, failure: error, usedATry: false), dialled: dialled, now: ExchangeTransport.now())
                } else {
                    let failure = TableFailure(peer: address, failure: error, usedATry: revealed)
                    members.failed(id, failure, dialled: dialled, now: ExchangeTransport.now())
                    if revealed { events.failed(failure, budget.failed) }
                }
                if budget.exhausted { ending.yield(.triesSpent) }
            }
        }
        let ended: TableEnd = await withTaskGroup(of: Void.self) { group in
            // Serve the members that dial us: a connection must introduce a member announcing the
            // table's N whose session id sorts before ours, not paired yet.
            group.addTask {
                let guardian = PeerGuard()
                let quiet = QuietFailures<ExchangeEvent.QuietFailure>(participant)
                let slots = ConnectionSlots(total: ExchangeTransport.maximumConnections, perSource: ExchangeTransport.maximumPerSource)
                let open = NIOLockedValueBox<[Int: Channel]>([:])
                try? await ExchangeTransport.accept(server.channel, guardian: guardian, quietFailures: quiet, slots: slots,
                                                    open: open) { connection, address, slot in
                    inFlight.withLockedValue { $0 += 1 }
                    defer { inFlight.withLockedValue { $0 -= 1 } }
                    var greeting = participant
                    greeting.card = {
                        slots.greeted(slot)
                        return try await participant.card()
                    }
                    let session = greeting.session(.listener)
                    let attempt: Result<ExchangeResult, ExchangeFailure>
                    do throws(ExchangeFailure) {
                        attempt = .success(try await ExchangeTransport.run(
                            session, on: connection, participant: greeting, stepTimeout: step, address: address, budget: budget,
                            expectIntroduction: (own, {
                                if closing.withLockedValue({ $0 }) { return [] }
                                let now = ExchangeTransport.now()
                                return heard().map(\.announcement.sessionID).filter { !Rendezvous.dials(own: own, peer: $0) && members.isOpen($0, now: now) }
                            })))
                    } catch {
                        attempt = .failure(error)
                    }
                    let id = session.binding?.dialerID
                    if case .failure = attempt, !session.codeRevealed {
                        guardian.recordFailure(address, now: ExchangeTransport.now())
                        // Never got as far as the code (a port scan, a stranger, a member not heard yet): costs nothing.
                        if id?.isEmpty ?? true {
                            switch attempt {
                            case .failure(.notChosen): participant.events(.step(.notChosen(address: address)))
                            case .failure(let e): quiet.record(.peerFailed(address: address, failure: e, stillListening: false), now: ExchangeTransport.now())
                            case .success: break
                            }
                            return
                        }
                    }
                    await settle(attempt, id: id.flatMap { $0.isEmpty ? nil : $0 }, dialled: false, address: address, revealed: session.codeRevealed)
                } afterwards: {
                    for c in open.withLockedValue({ Array($0.values) }) { c.close(promise: nil) }
                }
            }
            // Dial the members whose session id sorts after ours, as they are heard.
            group.addTask {
                await withTaskGroup(of: String.self) { dials in
                    var busy = Set<String>()
                    while !Task.isCancelled {
                        let now = ExchangeTransport.now()
                        let due = heard().filter { Rendezvous.dials(own: own, peer: $0.announcement.sessionID) && members.isOpen($0.announcement.sessionID, now: now) }
                        for peer in Rendezvous.order(due, skipping: []) where busy.count < parallelDials && !busy.contains(peer.host) {
                            let id = peer.announcement.sessionID
                            guard !closing.withLockedValue({ $0 }), members.begin(id) else { continue }
                            busy.insert(peer.host)
                            inFlight.withLockedValue { $0 += 1 }
                            dials.addTask {
                                defer { inFlight.withLockedValue { $0 -= 1 } }
                                let label = "\(peer.readableHost) port \(peer.announcement.port)"
                                let connection: ExchangeTransport.Connection
                                switch await ExchangeTransport.connect(to: peer.tcpAddress, until: ExchangeTransport.now() + 1,
                                                                       attemptTimeout: { _ in step }, pause: .milliseconds(10)) {
                                case .success(let c): connection = c
                                case .failure(let f):
                                    await settle(.failure(.unreachable(.cannotConnect(to: label, f.problem))), id: id, dialled: true, address: peer.readableHost, revealed: false)
                                    return peer.host
                                }
                                let session = participant.session(.dialer)
                                let attempt: Result<ExchangeResult, ExchangeFailure>
                                do throws(ExchangeFailure) {
                                    attempt = .success(try await ExchangeTransport.run(session, on: connection, participant: participant, stepTimeout: step,
                                                                                       address: peer.host, budget: budget, introduce: (own, id)))
                                } catch {
                                    attempt = .failure(error)
                                }
                                await settle(attempt, id: id, dialled: true, address: peer.readableHost, revealed: session.codeRevealed)
                                return peer.host
                            }
                        }
                        // Look again when a dial ends, a member is heard, or a retry is due.
                        let wake = min(deadline, ExchangeTransport.now() + 0.25)
                        if busy.isEmpty {
                            _ = await discovery.waitForChoice(until: wake) { peers, now in
                                peers.first { $0.announcement.table && $0.announcement.matches(code: code)
                                    && Rendezvous.dials(own: own, peer: $0.announcement.sessionID) && members.isOpen($0.announcement.sessionID, now: now) }
                            }
                        } else {
                            dials.addTask {
                                try? await Task.sleep(for: .milliseconds(Int64(max(0, wake - ExchangeTransport.now()) * 1000)))
                                return ""
                            }
                            while let host = await dials.next() {
                                if host.isEmpty { break }
                                busy.remove(host)
                                break
                            }
                        }
                    }
                    dials.cancelAll()
                }
            }
            group.addTask {
                await events.stop()
                ending.yield(.stopped)
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int64(max(0, deadline - ExchangeTransport.now()) * 1000)))
                ending.yield(.timedOut)
            }
            var reasons = ends.makeAsyncIterator()
            let why = await reasons.next() ?? .timedOut
            if why == .expected || why == .stopped {
                closing.withLockedValue { $0 = true }
                let until = ExchangeTransport.now() + finishingGrace
                while inFlight.withLockedValue({ $0 }) > 0, ExchangeTransport.now() < until { try? await Task.sleep(for: .milliseconds(10)) }
            }
            try? await server.close()
            group.cancelAll()
            return why
        }
        members.heard(discovery.heardSoFar.filter { $0.announcement.table && $0.announcement.matches(code: code) })
        await discovery.stop(linger: false)
        return TableOutcome(ended: ended, joined: members.joinedCount, failures: members.failures, triesUsed: budget.failed)
    }
}
