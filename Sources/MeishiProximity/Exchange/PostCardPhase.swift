import MeishiCard

/// What a post-card phase is told of its session once both cards are acknowledged.
public struct PostCardContext: Sendable {
    public let role: ExchangeSession.Role
    /// The peer's card: verified, bound to this session, acknowledged.
    public let peerCard: VerifiedCard
    /// T of the handshake (docs/PROTOCOL.md §5.2/§5.6).
    public let transcriptHash: [UInt8]
    /// The PAKE confirmed `--code`; whether a person compared digits is the application's to say.
    public let codeConfirmedByPAKE: Bool

    public init(role: ExchangeSession.Role, peerCard: VerifiedCard, transcriptHash: [UInt8], codeConfirmedByPAKE: Bool) {
        self.role = role
        self.peerCard = peerCard
        self.transcriptHash = transcriptHash
        self.codeConfirmedByPAKE = codeConfirmedByPAKE
    }
}

/// One message of a post-card phase: an inner type of the session's sealed frames and its content.
public struct PostCardMessage: Equatable, Sendable {
    public var type: UInt8
    public var content: [UInt8]

    public init(type: UInt8, content: [UInt8]) {
        self.type = type
        self.content = content
    }
}

/// Why the driver stopped a phase before the phase itself had finished.
public enum PostCardInterruption: Error, Equatable, Sendable {
    /// A well-sealed frame that is not one of this phase's: the channel still works, and what
    /// the phase answers (an ABORT with its reason) is sent.
    case unexpected(ExchangeError)
    /// The channel failed (a frame that did not authenticate, a bad frame): nothing more is sent.
    case broken(ExchangeError)
    /// The connection ended or timed out.
    case connectionLost(ConnectionLoss)
}

/// What a session waits for: where a lost connection caught it.
public enum SessionStep: Equatable, Sendable {
    case handshake
    /// The other person's confirmation of the digits (or ours).
    case confirmation
    /// The peer's card.
    case card
    /// The peer's acknowledgement of our card.
    case acknowledgement
    /// The peer's messages of a post-card phase, by the phase's `name`.
    case phase(String)
}

/// How a connection ended before the session was done with it (the executable words it).
public enum ConnectionLoss: Equatable, Sendable {
    /// The peer closed it while this side waited.
    case closed(waiting: SessionStep)
    /// Nothing came within the step limit.
    case timedOut(waiting: SessionStep)
    /// The socket failed.
    case failed(SocketProblem)
}

/// How a socket failed (`ConnectionLoss.failed`).
public enum SocketProblem: Equatable, Sendable {
    /// The other side reset the connection (ECONNRESET).
    case reset
    /// Any other error, in the system's (or SwiftNIO's) words.
    case other(String)
}

/// Work a phase needs done off the session before it can go on, such as the common-friends
/// blinding computed ahead on another task: the driver awaits `run`, then feeds `.workDone`.
public struct PostCardWork: Sendable {
    public let run: @Sendable () async -> Void
    public init(_ run: @escaping @Sendable () async -> Void) { self.run = run }
}

/// A phase that runs after both ACKs on the session's sealed channel (docs/PROTOCOL.md §8): the
/// session (`ExchangeSession.handle`) sends what `start` returns, then gives it each message of
/// its `innerTypes` and sends what it answers until `isFinished`; any other frame interrupts it.
/// A phase never throws: a peer breaking its rules ends it with an outcome it keeps (read it from
/// `ExchangeResult.phase(_:)`), and the cards stay stored whatever happens here. A phase has no
/// sockets and never waits: what it needs from outside it asks for as `awaiting` work.
///
/// Adding a phase is a type conforming to this, an inner-type range of its own in PROTOCOL §8's
/// table, its place in the list of phases the application gives the session, and the wording of
/// its outcome and of its `--verbose` line (the session tells `.phaseEnded(phase, …)` of every
/// phase; the executable words it by the phase's type, Sources/meishi/ExchangeEvents.swift).
///
/// A phase object belongs to one session and is used by that session's task alone.
public protocol PostCardPhase: AnyObject, Sendable {
    /// The inner types this phase owns, e.g. `0x50...0x5F` for common friends.
    static var innerTypes: ClosedRange<UInt8> { get }
    /// What the phase is, for diagnostics ("common friends").
    var name: String { get }
    /// The first messages to send (none when the phase waits for the peer).
    func start(_ context: PostCardContext) -> [PostCardMessage]
    /// A message of the peer of one of `innerTypes`; returns the messages to send.
    func receive(_ message: PostCardMessage) -> [PostCardMessage]
    /// Work to be done before the phase goes on (nil: none); once done, `resume` is called.
    var awaiting: PostCardWork? { get }
    /// The work asked for is done; returns the messages to send.
    func resume() -> [PostCardMessage]
    /// The phase has its outcome: the session goes on to the next.
    var isFinished: Bool { get }
    /// Ends the phase with `reason` as its outcome; returns what to tell the peer (sent only
    /// for `.unexpected`).
    func interrupted(_ reason: PostCardInterruption) -> [PostCardMessage]
}

extension PostCardPhase {
    public var awaiting: PostCardWork? { nil }
    public func resume() -> [PostCardMessage] { [] }
}
