import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Runs the exchange protocol over TCP with SwiftNIO.
public enum ExchangeTransport {
    typealias Connection = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// An address as people read it: IPv4-mapped IPv6 (`::ffff:10.0.0.2`) as plain IPv4.
    static func plainAddress(_ a: String) -> String {
        a.hasPrefix("::ffff:") && a.contains(".") ? String(a.dropFirst(7)) : a
    }

    /// Monotonic seconds.
    public static func now() -> Double {
        Double(DispatchTimeShim.uptimeNanoseconds()) / 1e9
    }

    /// A connection the listener accepted, waiting to be served. One still waiting when the
    /// listener stops (an exchange ended, the guess budget ran out, the side dials instead) is
    /// dropped unserved, and NIO traps (SIGILL) when a live connection's writer is released
    /// without being finished: this one finishes and closes it instead.
    final class Accepted: Sendable {
        private let waiting: NIOLockedValueBox<Connection?>

        init(_ connection: Connection) { waiting = NIOLockedValueBox(connection) }

        /// The connection, to be served (its `executeThenClose` finishes it); nil once taken.
        func take() -> Connection? { waiting.withLockedValue { c in defer { c = nil }; return c } }

        deinit {
            guard let unserved = take() else { return }
            unserved.outbound.finish()
            unserved.channel.close(promise: nil)
        }
    }

    /// A bound TCP listener, before it serves.
    public struct Server: Sendable {
        let channel: NIOAsyncChannel<Accepted, Never>
        public var port: Int { channel.channel.localAddress?.port ?? 0 }
        /// Closes a listener that will not serve (this side dials instead).
        public func close() async throws { try await channel.channel.close() }
    }

    /// Binds the TCP listener (port 0: any free port). `host` nil: every IPv6 and IPv4 address
    /// (dual stack), or every IPv4 address where IPv6 is off.
    public static func bind(host: String?, port: Int) async throws(ExchangeFailure) -> Server {
        guard let host else {
            if let dual = try? await bind(host: "::", port: port) { return dual }
            return try await bind(host: "0.0.0.0", port: port)
        }
        do {
            // A numeric address is bound without a resolver call (getaddrinfo asks netlink and
            // the name services each time, on the way to the first announcement).
            let address = try (try? SocketAddress(ipAddress: host, port: port)) ?? SocketAddress.makeAddressResolvingHost(host, port: port)
            return Server(channel: try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(to: address) { channel in
                    channel.eventLoop.makeCompletedFuture { Accepted(try Connection(wrappingChannelSynchronously: channel)) }
                })
        } catch {
            if errno(of: error) == EADDRINUSE { throw .addressInUse(port) }
            throw .io(.cannotListen(host: host, port: port, error: "\(error)"))
        }
    }

    /// Waits for one peer on `host:port` (port 0: any free port, told as `.listening`).
    /// Failing peers are told and the listener keeps waiting until `timeout`.
    public static func listen(host: String?, port: Int, timeout: TimeAmount, stepTimeout: TimeAmount,
                              participant: ExchangeParticipant, budget: GuessBudget) async throws(ExchangeFailure) -> ExchangeResult {
        let server = try await bind(host: host, port: port)
        participant.events(.listening(port: server.port))
        return try await serve(server, timeout: timeout, stepTimeout: stepTimeout, participant: participant, budget: budget,
                               onlySessions: nil)
    }

    /// Connections a listener serves at once, and from one source address (docs/PROTOCOL.md §5.4).
    static let maximumConnections = 32
    static let maximumPerSource = 4

    /// Serves `server` until one exchange ends by a person's decision, the guess budget is
    /// spent, or `timeout` passes. With `onlySessions` (after discovery), a connection must first
    /// introduce one of those session ids (PROTOCOL.md §5.5); any other is refused like a failing
    /// peer. Addresses cannot serve here: the chosen peer may dial from its IPv4 or IPv6 address.
    /// A pairing whose codes do not match (`--code` mistyped on one side) ends the run at once,
    /// unless `othersPending` says other candidates are still being tried. With `pairingLost`
    /// (discovery without a code), a pairing lost after its code was computed ends the serving
    /// too, once that is called: the chosen peer is gone, and discovery chooses again.
    ///
    /// Connections are served at once, each in its own task, at most `maximumConnections` and
    /// `maximumPerSource` from one address: when the slots are full the oldest connection that has
    /// not finished its handshake is cut, so idle or stalled connections cannot hold the honest
    /// peer up. One session at a time goes past its handshake (`SessionClaim`): the person is asked
    /// about one code at a time, and one card is exchanged.
    public static func serve(_ server: Server, timeout: TimeAmount, stepTimeout: TimeAmount, participant: ExchangeParticipant,
                             budget: GuessBudget, onlySessions: (own: [UInt8], peers: @Sendable () -> [[UInt8]])?,
                             othersPending: @escaping @Sendable () -> Bool = { false },
                             pairingLost: (@Sendable () -> Void)? = nil) async throws(ExchangeFailure) -> ExchangeResult {
        let channel = server.channel
        let expired = NIOLockedValueBox(false)
        let overall = channel.channel.eventLoop.scheduleTask(in: timeout) {
            expired.withLockedValue { $0 = true }
            channel.channel.close(promise: nil)
        }
        defer { overall.cancel() }
        let guardian = PeerGuard()
        let quietFailures = QuietFailures<ExchangeEvent.QuietFailure>(participant)
        let slots = ConnectionSlots(total: maximumConnections, perSource: maximumPerSource)
        let claim = SessionClaim()
        // The sessions in progress, closed when the run is decided or its time is up.
        let open = NIOLockedValueBox<[Int: Channel]>([:])
        let outcome = NIOLockedValueBox<Result<ExchangeResult, ExchangeFailure>?>(nil)
        @Sendable func decide(_ result: Result<ExchangeResult, ExchangeFailure>) {
            guard outcome.withLockedValue({ o in defer { if o == nil { o = result } }; return o == nil }) else { return }
            channel.channel.close(promise: nil)
            for c in open.withLockedValue({ Array($0.values) }) { c.close(promise: nil) }
        }
        /// What one finished session means for the run (`decide` when it is over).
        @Sendable func settle(_ attempt: Result<ExchangeResult, ExchangeFailure>, session: ExchangeSession, address: String) {
            switch attempt {
            case .success, .failure(.declinedLocally), .failure(.protocolFailure(.declinedByPeer)),
                 .failure(.unanswered), .failure(.protocolFailure(.peerDidNotAnswer)):
                // A person decided (or gave no answer): the exchange is over either way.
                decide(attempt)
            case .failure(.notChosen):
                // Another meishi's choice or its check that we listen: nothing to tell but with --verbose.
                guardian.recordFailure(address, now: now())
                participant.events(.step(.notChosen(address: address)))
            case .failure(.tooManyGuesses):
                // The last try is held by a pairing still in progress: this one was refused before it
                // revealed anything.
                guardian.recordFailure(address, now: now())
                if budget.exhausted { return decide(.failure(.tooManyGuesses(budget.spent))) }
                quietFailures.record(.noTriesLeft(address: address), now: now())
            case .failure(let error):
                guardian.recordFailure(address, now: now())
                guard session.codeRevealed else {
                    // Never got far enough to use the code (a port scan, garbage, a cut idle connection): costs nothing.
                    quietFailures.record(.peerFailed(address: address, failure: error, stillListening: true), now: now())
                    return
                }
                // The try was taken when the code was first used (`run`).
                let mismatch = if case .protocolFailure(.codesDoNotMatch) = error { true } else { false }
                if mismatch, !budget.exhausted, !othersPending() {
                    // Most likely a mistyped code: both people had better know now than at --timeout.
                    // The error says so; no count of tries, as none are left to promise.
                    return decide(attempt)
                }
                // Tries of pairings that ended, this one included: one in progress is counted when it ends,
                // so the count never jumps ahead nor says the same number twice.
                participant.events(.peerHungUp(address: address, failure: error, triesUsed: budget.failed))
                if budget.exhausted { return decide(.failure(.tooManyGuesses(budget.spent))) }
                if mismatch {
                    participant.events(.stillTryingOthers)
                    return
                }
                if let pairingLost {
                    pairingLost()
                    return decide(attempt)
                }
                // With every try taken, only the pairing in progress can still end well: no new one is listened for.
                if budget.spent < GuessBudget.allowed { participant.events(.stillListening) }
            }
        }
        do {
            try await accept(channel, guardian: guardian, quietFailures: quietFailures, slots: slots, open: open) { connection, address, slot in
                defer { claim.release(slot) }
                let session = participant.session(.listener)
                let attempt: Result<ExchangeResult, ExchangeFailure>
                do throws(ExchangeFailure) {
                    let claiming = claim.participant(participant, slot: slot) { slots.greeted(slot) }
                    attempt = .success(try await run(session, on: connection, participant: claiming, stepTimeout: stepTimeout,
                                                     address: address, budget: budget,
                                                     expectIntroduction: onlySessions.map { ($0.own, $0.peers) }))
                } catch {
                    attempt = .failure(error)
                }
                if outcome.withLockedValue({ $0 == nil }) { settle(attempt, session: session, address: address) }
            } afterwards: {
                // The run is decided or its time is up: what is still in progress ends now,
                // except the session past its handshake (a person may be answering).
                let held = claim.holder
                for (slot, c) in open.withLockedValue({ $0 }) where slot != held || outcome.withLockedValue({ $0 != nil }) {
                    c.close(promise: nil)
                }
            }
        } catch {
            if outcome.withLockedValue({ $0 == nil }) && !expired.withLockedValue({ $0 }) { throw .io(.listenerFailed(error: "\(error)")) }
        }
        if let decided = outcome.withLockedValue({ $0 }) { return try decided.get() }
        throw .timedOut(.noPeerCompleted)
    }

    /// The accept loop of a listener (§5.4): each connection accepted, unless its address is
    /// banned or its slots are full, is served at once by `serveOne` (its address and slot) in a
    /// task of its own, until the listener closes; then `afterwards` runs while they still may.
    static func accept(_ channel: NIOAsyncChannel<Accepted, Never>, guardian: PeerGuard, quietFailures: QuietFailures<ExchangeEvent.QuietFailure>,
                       slots: ConnectionSlots, open: NIOLockedValueBox<[Int: Channel]>,
                       serveOne: @escaping @Sendable (Connection, String, Int) async -> Void,
                       afterwards: @escaping @Sendable () -> Void) async throws {
        try await channel.executeThenClose { inbound in
            await withDiscardingTaskGroup { group in
                do {
                    for try await accepted in inbound {
                        guard let connection = accepted.take() else { continue }
                        let address = plainAddress(connection.channel.remoteAddress?.ipAddress ?? "unknown")
                        if guardian.isBanned(address, now: now()) {
                            quietFailures.record(.banned(address: address), now: now())
                            try? await connection.executeThenClose { _, _ in }  // finished, not dropped (see Accepted)
                            continue
                        }
                        guard let slot = await slots.admit(address, close: { connection.channel.close(promise: nil) }, cut: { source in
                            quietFailures.record(.cutIdle(address: source), now: now())
                        }) else {
                            try? await connection.executeThenClose { _, _ in }  // finished, not dropped (see Accepted)
                            continue
                        }
                        open.withLockedValue { $0[slot] = connection.channel }
                        group.addTask {
                            defer {
                                open.withLockedValue { $0[slot] = nil }
                                slots.release(slot)
                            }
                            await serveOne(connection, address, slot)
                        }
                    }
                } catch {}
                afterwards()
            }
        }
    }

    /// Connects to `host:port` and runs the exchange as the dialer. A refused connection is
    /// retried every 10 ms until `waitFor` has passed, so both sides can be started in any order.
    public static func dial(host: String, port: Int, stepTimeout: TimeAmount, waitFor: TimeAmount = .zero,
                            participant: ExchangeParticipant) async throws(ExchangeFailure) -> ExchangeResult {
        let address: SocketAddress
        do { address = try SocketAddress.makeAddressResolvingHost(host, port: port) } catch {
            throw .unknownHost(host)
        }
        // Nobody there for the whole wait is a timeout, as when nobody announces itself (75).
        return try await dial(address, label: (host.contains(":") ? "[\(host)]" : host) + ":\(port)", stepTimeout: stepTimeout,
                              waitFor: waitFor, nobodyThereTimesOut: true, participant: participant)
    }

    /// Connects to `address` (e.g. a discovered peer, with its IPv6 scope) and runs the exchange.
    /// No connection within `waitFor` is `.unreachable`, or with `nobodyThereTimesOut` (`--peer`,
    /// waiting for its --timeout) `.timedOut`.
    public static func dial(_ address: SocketAddress, label: String, stepTimeout: TimeAmount, waitFor: TimeAmount = .zero,
                            nobodyThereTimesOut: Bool = false, introduce: (own: [UInt8], peer: [UInt8])? = nil, budget: GuessBudget? = nil,
                            participant: ExchangeParticipant) async throws(ExchangeFailure) -> ExchangeResult {
        let deadline = now() + Double(waitFor.nanoseconds) / 1e9
        let connection: Connection
        switch await connect(to: address, until: deadline, attemptTimeout: { _ in stepTimeout }, pause: .milliseconds(10)) {
        case .success(let c): connection = c
        case .failure(let f) where nobodyThereTimesOut:
            throw .timedOut(.nobodyAnswered(at: label, f.problem))
        case .failure(let f): throw .unreachable(.cannotConnect(to: label, f.problem))
        }
        let session = participant.session(.dialer)
        do {
            return try await run(session, on: connection, participant: participant, stepTimeout: stepTimeout, address: label,
                                 budget: budget, introduce: introduce)
        } catch {
            guard let budget else { throw error }
            switch error {
            case .tooManyGuesses:
                // Refused before revealing anything: the last try is held by another pairing in progress.
                if budget.exhausted { throw error }
                throw .unreachable(.noTriesLeft(at: label))
            case .declinedLocally, .protocolFailure(.declinedByPeer), .unanswered, .protocolFailure(.peerDidNotAnswer): break
            default:
                // The try was taken when the code could first be computed (`run`).
                guard session.codeRevealed else { break }
                // A mismatch is told by whoever decides whether the run goes on (`Rendezvous.dialInTurn`).
                if case .protocolFailure(.codesDoNotMatch) = error {} else {
                    participant.events(.pairingAbandoned(peer: label, failure: error, triesUsed: budget.failed))
                }
                if budget.exhausted { throw .tooManyGuesses(budget.spent) }
            }
            throw error
        }
    }

    /// The errno behind a socket error, when there is one.
    static func errno(of error: any Error) -> CInt? {
        if let e = error as? IOError { return e.errnoCode }
        if let e = error as? NIOConnectionError { return e.connectionErrors.lazy.compactMap { errno(of: $0.error) }.first }
        return nil
    }

    /// A connection error as a value.
    static func connectProblem(_ error: any Error) -> ExchangeFailure.ConnectProblem {
        switch errno(of: error) {
        case ECONNREFUSED?: .refused
        case EHOSTUNREACH?, ENETUNREACH?: .noRoute
        case ETIMEDOUT?: .noAnswer
        default:
            // NIO's own connect timeout reads "Connect timeout (3 s)".
            if case ChannelError.connectTimeout? = error as? ChannelError { .noAnswer } else { .other("\(error)") }
        }
    }
}
