import MeishiCard
import MeishiCrypto
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// What the application supplies to an exchange.
public struct ExchangeParticipant: Sendable {
    /// Signs our card when it is about to be sent (after both confirmations), with the key that signed it.
    public var card: @Sendable () throws -> (SignedCard, Ed25519.SigningKey)
    /// Everything `meishi verify` checks plus the freshness window; every session requires it.
    public var verifier: CardVerifier
    /// The code both people typed (`--code`): CPace authenticates the session instead of digits.
    public var code: ExchangeCode?
    /// Shows the code and returns whether the person says it matches the other screen.
    public var confirmCode: @Sendable (String) async -> Bool
    /// A diagnostic line (connection refused, garbage from a peer, …).
    public var log: @Sendable (String) -> Void
    /// Each step of the session as it happens (`--verbose`); nothing a peer sent is in it
    /// beyond sizes and the address.
    public var trace: @Sendable (String) -> Void = { _ in }
    /// Post-card phase 1: compare contacts privately (nil: the phase is not run at all; an old peer).
    public var commonFriends: CommonFriendsRequest?
    /// Post-card phase 2: one message each way (nil: the phase is not run).
    public var messages: ExchangeMessages?

    public init(card: @escaping @Sendable () throws -> (SignedCard, Ed25519.SigningKey), verifier: CardVerifier, code: ExchangeCode? = nil,
                confirmCode: @escaping @Sendable (String) async -> Bool, log: @escaping @Sendable (String) -> Void) {
        self.card = card
        self.verifier = verifier
        self.code = code
        self.confirmCode = confirmCode
        self.log = log
    }
}

extension ExchangeParticipant {
    /// A new session in `role`, bound to our code when we have one.
    func session(_ role: ExchangeSession.Role) -> ExchangeSession {
        ExchangeSession(role: role, verifier: verifier, binding: code.map { ExchangeSession.CodeBinding(code: $0) })
    }
}

/// A finished exchange: both people confirmed, both cards verified and acknowledged.
public struct ExchangeResult: Sendable {
    /// The peer's card as it arrived and verified.
    public let peerCard: VerifiedCard
    /// The 6-digit code the people compared (or `--yes` skipped); nil when the PAKE confirmed `--code`.
    public let code: String?
    public let peerAddress: String
    /// How the common-friends phase ended; nil when this side did not ask for it.
    public let commonFriends: CommonFriendsOutcome?
    /// What that phase cost.
    public let commonFriendsCost: CommonFriendsCost
    /// How the message phase ended; nil when this side did not run it.
    public let messages: ExchangeMessageOutcome?
}

/// Why an exchange did not finish.
public enum ExchangeFailure: Error, Sendable {
    /// Discovery heard several peers and nobody chose one.
    case ambiguous([DiscoveredPeer])
    /// Discovery heard no peer (`withCode`: none announcing the same code) before the deadline.
    case noPeer(withCode: Bool)
    /// `--interface` names no interface of this machine.
    case noSuchInterface(String, available: [String])
    /// `--interface` names an interface without multicast (such as `lo`, usually).
    case interfaceCannotMulticast(String)
    /// Three pairings with this run were started and abandoned after the code could be computed.
    case tooManyGuesses(Int)
    /// Another program (or another meishi) already listens on this TCP port.
    case addressInUse(Int)
    /// The host of `--peer` has no address.
    case unknownHost(String)
    case timedOut(String)
    case unreachable(String)
    case protocolFailure(ExchangeError)
    case declinedLocally
    case connectionLost(String)
    case io(String)
}

/// The guesses one run allows (docs/PROTOCOL.md §5.4): a pairing abandoned after this side sent
/// what lets the peer compute the code has shown the peer one code sample. The budget is per
/// run, not per address, so rotating source addresses gains nothing.
///
/// A try is taken *before* the frame that reveals a sample is sent, not when the pairing ends:
/// with discovery and a code this side serves and dials at once, and an attacker holding both
/// pairings open could otherwise resolve two guesses on the last try (4 in all). A success or a
/// person's decision ends the run anyway, so a try once taken is never given back.
public final class GuessBudget: Sendable {
    public static let allowed = 3
    private let state = NIOLockedValueBox<(used: Int, inFlight: Int)>((0, 0))

    public init() {}

    /// Tries taken so far, including those of pairings still in progress.
    public var spent: Int { state.withLockedValue { $0.used } }

    /// Every try is used and no pairing holding one is still in progress: the run must end.
    public var exhausted: Bool { state.withLockedValue { $0.used >= Self.allowed && $0.inFlight == 0 } }

    /// Takes one try for a pairing about to reveal a code sample; false (take nothing) when none is left.
    func reserve() -> Bool {
        state.withLockedValue { s in
            guard s.used < Self.allowed else { return false }
            s.used += 1
            s.inFlight += 1
            return true
        }
    }

    /// The pairing that reserved a try has ended (the try stays used).
    func settle() {
        state.withLockedValue { $0.inFlight -= 1 }
    }

    /// Records one spent guess at once; true when the budget is now exhausted.
    func spend() -> Bool {
        guard reserve() else { return true }
        settle()
        return exhausted
    }
}

/// Says "N more connections failed" instead of a line per connection: at most `burst` lines a
/// second, the rest counted into the next line.
final class FailureSummary: Sendable {
    private let state = NIOLockedValueBox<(pending: Int, windowStart: Double, said: Int)>((0, -1e9, 0))
    private let log: @Sendable (String) -> Void
    private let burst: Int
    private let counting: String

    init(burst: Int = 1, counting: String = "failed connections", log: @escaping @Sendable (String) -> Void) {
        self.burst = burst
        self.counting = counting
        self.log = log
    }

    func record(_ line: String, now: Double) {
        let suppressed: Int? = state.withLockedValue { s in
            if now - s.windowStart >= 1 { (s.windowStart, s.said) = (now, 0) }
            guard s.said < burst else {
                s.pending += 1
                return nil
            }
            s.said += 1
            defer { s.pending = 0 }
            return s.pending
        }
        guard let suppressed else { return }
        log(line + (suppressed > 0 ? " (and \(suppressed) more \(counting))" : ""))
    }
}

/// Tracks peers that fail: 5 failures in 10 minutes bans an address for 10 minutes.
final class PeerGuard: Sendable {
    static let maximumFailures = 5
    static let window: Double = 600
    private let failures = NIOLockedValueBox<[String: [Double]]>([:])

    func isBanned(_ address: String, now: Double) -> Bool {
        failures.withLockedValue { f in
            let recent = (f[address] ?? []).filter { now - $0 < Self.window }
            f[address] = recent
            return recent.count >= Self.maximumFailures
        }
    }

    func recordFailure(_ address: String, now: Double) {
        failures.withLockedValue { $0[address, default: []].append(now) }
    }
}

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
            return Server(channel: try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture { Accepted(try Connection(wrappingChannelSynchronously: channel)) }
                })
        } catch {
            if errno(of: error) == EADDRINUSE { throw .addressInUse(port) }
            throw .io("cannot listen on \(host):\(port): \(error)")
        }
    }

    /// Waits for one peer on `host:port` (port 0: any free port, reported through `listening`).
    /// Failing peers are logged and the listener keeps waiting until `timeout`.
    public static func listen(host: String?, port: Int, timeout: TimeAmount, stepTimeout: TimeAmount,
                              participant: ExchangeParticipant, budget: GuessBudget,
                              listening: @Sendable (Int) -> Void) async throws(ExchangeFailure) -> ExchangeResult {
        let server = try await bind(host: host, port: port)
        listening(server.port)
        return try await serve(server, timeout: timeout, stepTimeout: stepTimeout, participant: participant, budget: budget,
                               onlySessions: nil)
    }

    /// Serves `server` until one exchange ends by a person's decision, the guess budget is
    /// spent, or `timeout` passes. With `onlySessions` (after discovery), a connection must first
    /// introduce one of those session ids (PROTOCOL.md §5.5); any other is refused like a failing
    /// peer. Addresses cannot serve here: the chosen peer may dial from its IPv4 or IPv6 address.
    public static func serve(_ server: Server, timeout: TimeAmount, stepTimeout: TimeAmount, participant: ExchangeParticipant,
                             budget: GuessBudget, onlySessions: (own: [UInt8], peers: @Sendable () -> [[UInt8]])?) async throws(ExchangeFailure) -> ExchangeResult {
        let channel = server.channel
        let expired = NIOLockedValueBox(false)
        let overall = channel.channel.eventLoop.scheduleTask(in: timeout) {
            expired.withLockedValue { $0 = true }
            channel.channel.close(promise: nil)
        }
        defer { overall.cancel() }
        let guardian = PeerGuard()
        let quietFailures = FailureSummary(log: participant.log)
        var outcome: Result<ExchangeResult, ExchangeFailure>?
        do {
            try await channel.executeThenClose { inbound in
                for try await accepted in inbound {
                    guard let connection = accepted.take() else { continue }
                    let address = plainAddress(connection.channel.remoteAddress?.ipAddress ?? "unknown")
                    if guardian.isBanned(address, now: now()) {
                        quietFailures.record("ignoring \(address): too many failed attempts in the last 10 minutes", now: now())
                        try? await connection.channel.close()
                        continue
                    }
                    let session = participant.session(.listener)
                    let attempt: Result<ExchangeResult, ExchangeFailure>
                    do {
                        attempt = .success(try await run(session, on: connection, participant: participant, stepTimeout: stepTimeout,
                                                         address: address, budget: budget,
                                                         expectIntroduction: onlySessions.map { ($0.own, $0.peers()) }))
                    } catch {
                        attempt = .failure(error as? ExchangeFailure ?? .io("\(error)"))
                    }
                    switch attempt {
                    case .success, .failure(.declinedLocally), .failure(.protocolFailure(.declinedByPeer)):
                        // A person decided: the exchange is over either way.
                        outcome = attempt
                        return
                    case .failure(.tooManyGuesses):
                        // The last try is held by a pairing still in progress (the dial of discovery):
                        // this one was refused before it revealed anything.
                        guardian.recordFailure(address, now: now())
                        if budget.exhausted {
                            outcome = .failure(.tooManyGuesses(budget.spent))
                            return
                        }
                        quietFailures.record("refused \(address): no tries left while another pairing is in progress", now: now())
                    case .failure(let error):
                        guardian.recordFailure(address, now: now())
                        guard session.codeRevealed else {
                            // Never got far enough to learn a code (a port scan, garbage): costs nothing.
                            quietFailures.record("peer \(address) failed: \(describe(error)); still listening", now: now())
                            continue
                        }
                        // The try was taken when the code could first be computed (`run`).
                        participant.log("someone at \(address) started pairing and hung up: \(describe(error)) "
                                        + "(\(budget.spent) of \(GuessBudget.allowed) tries used)")
                        if budget.exhausted {
                            outcome = .failure(.tooManyGuesses(budget.spent))
                            return
                        }
                        participant.log("still listening")
                    }
                }
            }
        } catch {
            if outcome == nil && !expired.withLockedValue({ $0 }) { throw .io("listener failed: \(error)") }
        }
        if let outcome { return try outcome.get() }
        throw .timedOut("no peer completed an exchange")
    }

    /// Connects to `host:port` and runs the exchange as the dialer. A refused connection is
    /// retried every 10 ms until `waitFor` has passed, so both sides can be started in any order.
    public static func dial(host: String, port: Int, stepTimeout: TimeAmount, waitFor: TimeAmount = .zero,
                            participant: ExchangeParticipant) async throws(ExchangeFailure) -> ExchangeResult {
        let address: SocketAddress
        do { address = try SocketAddress.makeAddressResolvingHost(host, port: port) } catch {
            throw .unknownHost(host)
        }
        return try await dial(address, label: "\(host):\(port)", stepTimeout: stepTimeout, waitFor: waitFor, participant: participant)
    }

    /// Connects to `address` (e.g. a discovered peer, with its IPv6 scope) and runs the exchange.
    public static func dial(_ address: SocketAddress, label: String, stepTimeout: TimeAmount, waitFor: TimeAmount = .zero,
                            introduce: (own: [UInt8], peer: [UInt8])? = nil, budget: GuessBudget? = nil,
                            participant: ExchangeParticipant) async throws(ExchangeFailure) -> ExchangeResult {
        let deadline = now() + Double(waitFor.nanoseconds) / 1e9
        var connection: Connection?
        var lastError = ""
        while connection == nil {
            do {
                connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(stepTimeout)
                    .connect(to: address) { channel in
                        channel.eventLoop.makeCompletedFuture { try Connection(wrappingChannelSynchronously: channel) }
                    }
            } catch {
                lastError = plainWords(error)
                guard now() < deadline else { break }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        guard let connection else { throw .unreachable("cannot connect to \(label): \(lastError)") }
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
                throw .unreachable("\(label): no tries left while another pairing is in progress")
            case .declinedLocally, .protocolFailure(.declinedByPeer): break
            default:
                // The try was taken when the code could first be computed (`run`).
                guard session.codeRevealed else { break }
                participant.log("the pairing with \(label) was abandoned after the code was computed: \(describe(error)) "
                                + "(\(budget.spent) of \(GuessBudget.allowed) tries used)")
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

    /// A connection error as people say it.
    static func plainWords(_ error: any Error) -> String {
        switch errno(of: error) {
        case ECONNREFUSED?: "connection refused (nothing is listening on that port)"
        case EHOSTUNREACH?, ENETUNREACH?: "no route to that host"
        case ETIMEDOUT?: "no answer"
        default: error is ChannelError && "\(error)".contains("connectTimeout") ? "no answer" : "\(error)"
        }
    }

    public static func describe(_ f: ExchangeFailure) -> String {
        switch f {
        case .ambiguous(let peers): "\(peers.count) peers are announcing: "
            + peers.map { "\($0.host) (\(TerminalText.sanitized($0.announcement.alias ?? "no alias")))" }.joined(separator: ", ")
        case .noPeer(let withCode): withCode ? "no peer announced the same code" : "no other meishi announced itself on the network"
        case .noSuchInterface(let name, _): "there is no network interface named \(TerminalText.sanitized(name))"
        case .interfaceCannotMulticast(let name): "interface \(name) cannot send multicast, so peers cannot find each other on it"
        case .addressInUse(let port): "port \(port) is already in use on this machine"
        case .unknownHost(let host): "cannot find the host \(TerminalText.sanitized(host))"
        case .tooManyGuesses(let n): "\(n) pairings were started and abandoned after the code was shown: someone may be interfering; nothing was stored"
        case .timedOut(let w): "timed out: \(w)"
        case .unreachable(let w): w
        case .protocolFailure(let e): e.description
        case .declinedLocally: "the code was not confirmed"
        case .connectionLost(let w): "connection lost \(w)"
        case .io(let w): w
        }
    }

    /// How long a listener waits for a new connection's first frame (an honest dialer sends it at once).
    static let firstFrameTimeout: TimeAmount = .seconds(2)

    /// One session on one connection; closes the connection at the end.
    /// The frame type of the discovery introduction: 0x00 followed by the dialer's session id.
    static let introductionType: UInt8 = 0x00

    static func run(_ session: ExchangeSession, on connection: Connection, participant: ExchangeParticipant,
                    stepTimeout: TimeAmount, address: String, budget: GuessBudget? = nil, introduce: (own: [UInt8], peer: [UInt8])? = nil,
                    expectIntroduction: (own: [UInt8], candidates: [[UInt8]])? = nil) async throws(ExchangeFailure) -> ExchangeResult {
        let channel = connection.channel
        // A try taken from `budget` before the first frame that reveals a code sample (§5.4).
        let holdsTry = NIOLockedValueBox(false)
        defer { if holdsTry.withLockedValue({ $0 }) { budget?.settle() } }
        let timedOut = NIOLockedValueBox(false)
        var timer: Scheduled<Void>?
        func arm(_ t: TimeAmount) {
            timer?.cancel()
            timer = channel.eventLoop.scheduleTask(in: t) {
                timedOut.withLockedValue { $0 = true }
                channel.close(promise: nil)
            }
        }
        defer { timer?.cancel() }
        do {
            return try await connection.executeThenClose { inbound, outbound in
                var frames = FrameReader(iterator: inbound.makeAsyncIterator())
                func send(_ bodies: [[UInt8]]) async throws {
                    for body in bodies { try await outbound.write(ByteBuffer(bytes: FrameCodec.encode(body))) }
                }
                // A listener gives a new connection only `firstFrameTimeout` to say something: an
                // idle connection must not hold the one serving slot for a whole step.
                var heardPeer = false
                func firstFrameArrived() {
                    if !heardPeer, session.role == .listener { arm(stepTimeout) }
                    heardPeer = true
                }
                func next(_ what: String) async throws -> ExchangeSession.Event? {
                    guard let frame = try await frames.next() else {
                        throw ExchangeFailure.connectionLost(timedOut.withLockedValue { $0 } ? "(timed out waiting for \(what))" : "before \(what)")
                    }
                    firstFrameArrived()
                    let revealedBefore = session.codeRevealed
                    let step = try session.receive(frame)
                    if !revealedBefore, session.codeRevealed, let budget {
                        // What we are about to send lets the peer compute (or test) the code.
                        guard budget.reserve() else { throw ExchangeFailure.tooManyGuesses(budget.spent) }
                        holdsTry.withLockedValue { $0 = true }
                    }
                    try await send(step.send)
                    return step.event
                }
                do {
                    arm(session.role == .listener ? min(stepTimeout, firstFrameTimeout) : stepTimeout)
                    if let ids = introduce {
                        try await send([[introductionType] + ids.own])
                        session.bindDiscovery(dialerID: ids.own, listenerID: ids.peer)
                    }
                    if let ids = expectIntroduction {
                        guard let first = try await frames.next(), first.first == introductionType,
                              ids.candidates.contains(Array(first.dropFirst())) else {
                            throw ExchangeFailure.protocolFailure(.unexpectedMessage("not the peer chosen by discovery"))
                        }
                        firstFrameArrived()
                        session.bindDiscovery(dialerID: Array(first.dropFirst()), listenerID: ids.own)
                    }
                    participant.trace("connected to \(address) as the \(session.role == .dialer ? "dialer" : "listener")"
                                      + (participant.code != nil ? "; the code authenticates the session (CPace)" : ""))
                    if let hello = session.start() { try await send([hello]) }
                    var event: ExchangeSession.Event?
                    while !session.handshakeComplete { event = try await next("the handshake") }
                    participant.trace("handshake complete: the session is sealed")
                    var shownCode: String?
                    if case .codeReady(let code)? = event {
                        // The person may take a while to compare codes: no step timer meanwhile.
                        timer?.cancel()
                        let matches = await participant.confirmCode(code)
                        arm(stepTimeout)
                        try await send([session.confirm(matches)])
                        guard matches else { throw ExchangeFailure.declinedLocally }
                        shownCode = code
                    } else if case .codeConfirmed? = event {
                        participant.log("the codes match: the other side typed the same code")
                    } else {
                        throw ExchangeFailure.protocolFailure(.unexpectedMessage("no code"))
                    }
                    while !session.confirmedByPeer { _ = try await next("the other person's confirmation") }
                    participant.trace("the other side confirmed the code")
                    let (card, key) = try participant.card()
                    try await send([session.card(card, signedBy: key)])
                    participant.trace("sent my card, signed now (\(card.bytes.count) bytes)")
                    while session.peerCard == nil { _ = try await next("the peer's card") }
                    participant.trace("received the other card (\(session.peerCard!.bytes.count) bytes): signature, DID and time verified")
                    try await send([session.acknowledge()])
                    while !session.acknowledgedByPeer { _ = try await next("the peer's acknowledgement") }
                    participant.trace("both cards acknowledged")
                    // The cards are exchanged and both sides will store them: what follows (post-card
                    // phases, in order) can fail without undoing that.
                    var friends: CommonFriendsOutcome?
                    var cost = CommonFriendsCost()
                    if let request = participant.commonFriends {
                        participant.trace("comparing contacts for common friends (asking for \(request.mode.rawValue))")
                        friends = await commonFriends(request, session: session, cost: &cost, send: send, next: next)
                        participant.trace("common friends: \(cost.bytesSent) bytes sent, \(cost.bytesReceived) received in "
                                          + "\(Int((cost.seconds * 1000).rounded())) ms")
                    }
                    var messages: ExchangeMessageOutcome?
                    if let phase = participant.messages {
                        let started = now()
                        messages = await messagePhase(phase, session: session, send: send, next: next)
                        let m = messages!
                        let mine = m.withheld ? "ours withheld (not authenticated)" : m.sentEnvelope.map { "ours \($0.encoded.count) bytes" } ?? "none from us"
                        let theirs = m.received == nil ? "none from them" : "theirs received"
                        participant.trace("message phase: \(mine), \(theirs)\(m.failure.map { "; broke off: \($0)" } ?? "") in "
                                          + "\(Int(((now() - started) * 1000).rounded())) ms")
                    }
                    return ExchangeResult(peerCard: session.peerCard!, code: shownCode, peerAddress: address, commonFriends: friends,
                                          commonFriendsCost: cost, messages: messages)
                } catch let e as ExchangeError {
                    // Tell the peer why before the connection closes (a code mismatch in plain text:
                    // there is no shared key to seal with).
                    if e == .codesDoNotMatch, session.role == .listener { try? await send([ExchangeSession.mismatchFrame]) }
                    if let reject = session.reject(e.description) { try? await send([reject]) }
                    throw e
                }
            }
        } catch let e as ExchangeFailure {
            throw e
        } catch let e as ExchangeError {
            throw .protocolFailure(e)
        } catch {
            if timedOut.withLockedValue({ $0 }) { throw .timedOut("peer \(address) too slow") }
            throw .connectionLost("(\(error))")
        }
    }
}

extension ExchangeTransport {
    /// Runs the common-friends phase (docs/PROTOCOL.md §8) on an exchanged session. Whatever the
    /// peer does, this returns an outcome: a refusal sends ABORT with the reason and reports it.
    static func commonFriends(_ request: CommonFriendsRequest, session: ExchangeSession, cost: inout CommonFriendsCost,
                              send: ([[UInt8]]) async throws -> Void,
                              next: (String) async throws -> ExchangeSession.Event?) async -> CommonFriendsOutcome {
        let started = now()
        var sent = 0, received = 0
        defer { cost = CommonFriendsCost(bytesSent: sent, bytesReceived: received, seconds: now() - started) }
        // A sealed post-card frame on the wire: length prefix, 0x10, inner type, content, tag.
        let overhead = 4 + 1 + 1 + XChaCha20Poly1305.tagByteCount
        let elements = await request.elements(session.peerCard!.payload.senderDID)
        let phase = CommonFriendsPhase(request: request, elements: elements, transcriptHash: session.transcriptHash!, role: session.role,
                                       codeConfirmedByPAKE: session.codeConfirmedByPAKE)
        func seal(_ messages: [(type: UInt8, content: [UInt8])]) -> [[UInt8]] {
            sent += messages.reduce(0) { $0 + overhead + $1.content.count }
            return messages.map { session.postCard(type: $0.type, content: $0.content) }
        }
        do {
            try await send(seal([phase.hello()]))
            while phase.outcome == nil {
                if phase.needsBlinding {
                    try await send(seal(try phase.blind(with: await elements.blinding())))
                    continue
                }
                guard case .postCard(let type, let content)? = try await next("the peer's common friends") else {
                    throw CommonFriendsError.protocolViolation(.unexpectedMessage("a message outside the common-friends phase"))
                }
                received += overhead + content.count
                guard CommonFriendsPhase.innerTypes.contains(type) else {
                    throw CommonFriendsError.protocolViolation(.unexpectedMessage("post-card message \(type) during common friends"))
                }
                try await send(seal(try phase.receive(type: type, content: content)))
            }
            return phase.outcome!
        } catch let e as CommonFriendsError {
            if case .abortedByPeer = e {} else { try? await send(seal([CommonFriendsPhase.abort(e.description)])) }
            return .failed(e)
        } catch let e as ExchangeError {
            return .failed(.protocolViolation(e))
        } catch let e as ExchangeFailure {
            return .failed(.connection(describe(e)))
        } catch {
            return .failed(.connection("connection lost (\(error))"))
        }
    }
}

/// Turns the inbound byte stream into frame bodies.
struct FrameReader {
    var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    var decoder = FrameDecoder()
    var ready: [[UInt8]] = []

    mutating func next() async throws -> [UInt8]? {
        while ready.isEmpty {
            guard let buffer = try await iterator.next() else { return nil }
            ready += try decoder.feed(buffer.readableBytesView)
        }
        return ready.removeFirst()
    }
}

/// Monotonic time without Foundation.
enum DispatchTimeShim {
    static func uptimeNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

#if canImport(Glibc)
import Glibc
#endif
