import MeishiCard
import MeishiCrypto

/// What the application supplies to an exchange.
public struct ExchangeParticipant: Sendable {
    /// Signs our card when it is about to be sent (after both confirmations), with the key that
    /// signed it. It may wait for work the application started ahead (opening its store), and
    /// throw to end the session before the card leaves.
    public var card: @Sendable () async throws -> (SignedCard, Ed25519.SigningKey)
    /// Everything `meishi verify` checks plus the freshness window; every session requires it.
    public var verifier: CardVerifier
    /// The code both people typed (`--code`): CPace authenticates the session instead of digits.
    public var code: ExchangeCode?
    /// Shows the code and returns whether the person says it matches the other screen, or that
    /// they gave no answer.
    public var confirmCode: @Sendable (String) async -> CodeAnswer
    /// What happens as it happens (a peer that failed, the TCP port bound, each step for
    /// `--verbose`), as values the application words.
    public var events: @Sendable (ExchangeEvent) -> Void
    /// Makes the post-card phases of one session, in the order they run after both ACKs
    /// (docs/PROTOCOL.md §8): each connection gets its own, and the result carries them back.
    public var phases: @Sendable () -> [any PostCardPhase] = { [] }
    /// A member of a table (`--table`, §5.7): every session binds "table" into CPace's CI.
    public var table = false

    public init(card: @escaping @Sendable () async throws -> (SignedCard, Ed25519.SigningKey), verifier: CardVerifier, code: ExchangeCode? = nil,
                confirmCode: @escaping @Sendable (String) async -> CodeAnswer, events: @escaping @Sendable (ExchangeEvent) -> Void) {
        self.card = card
        self.verifier = verifier
        self.code = code
        self.confirmCode = confirmCode
        self.events = events
    }
}

/// The person's answer to "does the other screen show these digits?" (`true`: the same, `false`: they differ).
public enum CodeAnswer: Sendable, Equatable, ExpressibleByBooleanLiteral {
    case same
    case differ
    /// No answer: --timeout passed (`timedOut`), or the input ended (Ctrl-D, a terminal hung up).
    case none(timedOut: Bool)

    public init(booleanLiteral same: Bool) { self = same ? .same : .differ }
    public init(_ same: Bool) { self = same ? .same : .differ }
}

extension ExchangeParticipant {
    /// A new session in `role`, bound to our code when we have one.
    func session(_ role: ExchangeSession.Role) -> ExchangeSession {
        ExchangeSession(role: role, verifier: verifier, binding: code.map { ExchangeSession.CodeBinding(code: $0, table: table) },
                        phases: phases())
    }
}

/// A finished exchange: both people confirmed, both cards verified and acknowledged.
public struct ExchangeResult: Sendable {
    /// The peer's card as it arrived and verified.
    public let peerCard: VerifiedCard
    /// How the session was confirmed: by the PAKE (`--code`), or by the 6 digits shown.
    public let confirmation: Confirmation
    public enum Confirmation: Equatable, Sendable {
        /// Both typed the same code: CPace's key confirmation passed.
        case pake
        /// These digits were shown and the application said they match (a person, or `--yes`).
        case digits(String)
    }

    /// The 6 digits shown; nil when the PAKE confirmed `--code`.
    public var code: String? {
        if case .digits(let code) = confirmation { code } else { nil }
    }
    public let peerAddress: String
    /// The post-card phases as they ended, each holding its outcome.
    public let phases: [any PostCardPhase]
    /// Through `--relay`: which connection carried the session.
    public internal(set) var path: RelayPath? = nil

    /// The phase of type `P` that ran, if any.
    public func phase<P: PostCardPhase>(_ type: P.Type) -> P? {
        phases.lazy.compactMap { $0 as? P }.first
    }
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
    /// Nothing completed within --timeout.
    case timedOut(Timeout)
    /// The peer could not be reached, or refused this pairing before it began.
    case unreachable(Unreachable)
    case protocolFailure(ExchangeError)
    case declinedLocally
    /// The person here gave no answer to the digit question before --timeout.
    case unanswered
    case connectionLost(ConnectionLoss)
    /// This machine could not listen, announce or list its interfaces.
    case io(IOProblem)
    /// The mailbox server or the transit relay (`--relay`) failed before the session could run.
    case relay(RelayFailure)
    /// The peer's card is our own identity's (another meishi of ours, at a table): not stored.
    case ownCard
    /// A connection to a listener that serves only the session discovery chose (§5.5) ended
    /// before it introduced that session: another meishi that chose someone else, or one checking
    /// that this side listens (a connection opened and closed). Not a failure of this run.
    case notChosen
}


extension ExchangeFailure {
    /// What ran out of time.
    public enum Timeout: Equatable, Sendable {
        /// Peers came (or none did), and none completed an exchange.
        case noPeerCompleted
        /// `--peer`: nothing answered at `peer` within --timeout; the last connection error.
        case nobodyAnswered(at: String, ConnectProblem)
    }

    /// Why a peer could not be reached or a pairing could not begin.
    public enum Unreachable: Equatable, Sendable {
        /// Connecting to `peer` ("HOST port N", "HOST:PORT") failed.
        case cannotConnect(to: String, ConnectProblem)
        /// The last try is held by another pairing in progress.
        case noTriesLeft(at: String)
        /// Another session of this listener is already past its handshake.
        case anotherPairingPastHandshake
        /// `--interface NAME` names an interface discovery cannot use.
        case noUsableInterface(named: String)
        /// No interface of this machine supports multicast.
        case noMulticastInterface
        /// Every multicast interface is left out by the rules (`leftOut`, by name).
        case noLANInterface(leftOut: [String])
        /// A table member that announced itself but never completed a pairing with this one.
        case tableMemberNeverPaired
    }

    /// The last error of a connection attempt.
    public enum ConnectProblem: Equatable, Sendable {
        /// Nothing listens on that port.
        case refused
        /// No route to that host (or network).
        case noRoute
        /// Nothing answered before the attempt's time was up.
        case noAnswer
        /// Any other error, in the system's words.
        case other(String)
    }

    /// A local failure; `error` is the system's (or SwiftNIO's) description.
    public enum IOProblem: Equatable, Sendable {
        case cannotListen(host: String, port: Int, error: String)
        case listenerFailed(error: String)
        case cannotListInterfaces(error: String)
        case cannotJoinGroup(String, port: Int, error: String)
        case cannotJoinIPv6Group(error: String)
        /// Message delivery's probes: the UDP port could not be bound.
        case cannotListenUDP(port: Int, error: String)
        /// Message delivery's probes: the group could not be sent to.
        case cannotSendToGroup(String, port: Int, error: String)
        /// Any other local failure, in the system's (or SwiftNIO's) words.
        case other(String)
    }
}
