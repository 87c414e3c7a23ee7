import MeishiCard
import MeishiCrypto

/// Post-card phase 2 of an exchange: one message each way (docs/PROTOCOL.md §9.5).
///
/// After the common-friends phase each side sends one sealed frame, ENVELOPE (`0x60` ‖ envelope)
/// or NONE (`0x63`), and answers the peer's ENVELOPE with ACK (`0x61` ‖ id ‖ 0/1) or REFUSE
/// (`0x62` ‖ reason). The session's channel is already authenticated and sealed; the envelope is
/// the same `crypto_box` as `meishi send` uses, so it is stored sealed and stays deniable.
public struct ExchangeMessages: Sendable {
    /// Our envelope for the peer whose card just verified, or nil for none.
    public var outgoing: @Sendable (VerifiedCard) throws(MessageEnvelopeError) -> MessageEnvelope?
    /// Checks and stores the peer's envelope (the card has been verified and acknowledged).
    public var incoming: @Sendable ([UInt8], VerifiedCard) -> MessageVerdict
    /// Whether this side's session was authenticated (a code, or digits a person compared):
    /// without it nothing is sent and a received envelope is refused.
    public var authenticated: Bool

    public init(authenticated: Bool, outgoing: @escaping @Sendable (VerifiedCard) throws(MessageEnvelopeError) -> MessageEnvelope?,
                incoming: @escaping @Sendable ([UInt8], VerifiedCard) -> MessageVerdict) {
        self.authenticated = authenticated
        self.outgoing = outgoing
        self.incoming = incoming
    }
}

/// Why the message phase broke off (the cards stay stored).
public enum ExchangeMessageFailure: Equatable, Sendable {
    /// Our envelope could not be made.
    case notSealed(MessageEnvelopeError)
    /// The peer broke the phase's rules, or its frames stopped authenticating.
    case protocolViolation(ExchangeError)
    /// The connection ended or timed out.
    case connectionLost(ConnectionLoss)
}

/// How the message phase ended, for each direction.
public struct ExchangeMessageOutcome: Sendable {
    /// What the peer made of ours: nil when we sent none.
    public var sent: MessageVerdict?
    /// The envelope we sent (its id and expiry), when we sent one.
    public var sentEnvelope: MessageEnvelope?
    /// What we made of the peer's: nil when it sent none.
    public var received: MessageVerdict?
    /// We had a message but did not send it: our session was not authenticated.
    public var withheld = false
    /// The phase broke off (connection, protocol): what happened.
    public var failure: ExchangeMessageFailure?
}

/// The answer to an ENVELOPE, the same for `meishi send` (docs/PROTOCOL.md §9.4) and inside an
/// exchange (§9.5): ACK `0x61` ‖ id (16) ‖ 0 stored / 1 seen before, or REFUSE `0x62` ‖ reason.
public enum MessageAnswer: Equatable, Sendable {
    case acknowledged(id: [UInt8], duplicate: Bool)
    case refused(MessageRefusal)

    /// The answer to `envelope` (as received) that `verdict` calls for.
    public init(verdict: MessageVerdict, envelope: [UInt8]) {
        switch verdict {
        case .stored, .duplicate:
            self = .acknowledged(id: (try? MessageEnvelope(parsing: envelope))?.id ?? [], duplicate: verdict == .duplicate)
        case .refused(let reason):
            self = .refused(reason)
        }
    }

    /// Reads an inner frame; nil unless it is a well-formed ACK or REFUSE.
    public init?(decoding inner: [UInt8]) {
        switch inner.first {
        case MessageFrame.ack where inner.count == 2 + MessageEnvelope.idByteCount && inner.last! <= 1:
            self = .acknowledged(id: Array(inner[1...MessageEnvelope.idByteCount]), duplicate: inner.last! == 1)
        case MessageFrame.refusal where inner.count == 2:
            guard let reason = MessageRefusal(rawValue: inner[1]) else { return nil }
            self = .refused(reason)
        default:
            return nil
        }
    }

    /// The inner frame: type, then content.
    public var encoded: [UInt8] {
        switch self {
        case .acknowledged(let id, let duplicate): [MessageFrame.ack] + id + [duplicate ? 1 : 0]
        case .refused(let reason): [MessageFrame.refusal, reason.rawValue]
        }
    }

    /// What this answer says of the envelope `id`; nil for an acknowledgement of another id.
    public func verdict(for id: [UInt8]) -> MessageVerdict? {
        switch self {
        case .acknowledged(let acknowledged, let duplicate): acknowledged == id ? (duplicate ? .duplicate : .stored) : nil
        case .refused(let reason): .refused(reason)
        }
    }
}

/// The message phase as a state machine: `start` sends ours (or NONE), each peer message moves
/// it on, and it is finished once it has the peer's ENVELOPE or NONE and, when it sent an
/// ENVELOPE, the answer to it. Any other message ends it with a failure; nothing here throws.
public final class ExchangeMessagePhase: PostCardPhase, @unchecked Sendable {
    public static let innerTypes = MessageFrame.innerTypes
    public let name = "message"
    public let hooks: ExchangeMessages
    public private(set) var outcome = ExchangeMessageOutcome()

    enum State {
        case notStarted
        /// `ours` was sent (nil: NONE); `heardPeer`: the peer's ENVELOPE or NONE arrived.
        case running(peer: VerifiedCard, ours: MessageEnvelope?, heardPeer: Bool)
        case done
    }
    private(set) var state = State.notStarted

    public init(_ hooks: ExchangeMessages) { self.hooks = hooks }

    public var isFinished: Bool {
        if case .done = state { true } else { false }
    }

    public func start(_ context: PostCardContext) -> [PostCardMessage] {
        guard case .notStarted = state else { preconditionFailure("the message phase starts once") }
        var envelope: MessageEnvelope?
        do {
            envelope = try hooks.outgoing(context.peerCard)
        } catch {
            outcome.failure = .notSealed(error)
        }
        if envelope != nil, !hooks.authenticated {
            outcome.withheld = true
            envelope = nil
        }
        outcome.sentEnvelope = envelope
        state = .running(peer: context.peerCard, ours: envelope, heardPeer: false)
        return [envelope.map { PostCardMessage(type: MessageFrame.envelope, content: $0.encoded) }
                ?? PostCardMessage(type: MessageFrame.none, content: [])]
    }

    public func receive(_ message: PostCardMessage) -> [PostCardMessage] {
        guard case .running(let peer, let ours, let heardPeer) = state else {
            return interrupted(.unexpected(.unexpectedMessage("post-card message \(message.type) after the message phase")))
        }
        var reply: [PostCardMessage] = []
        switch message.type {
        case MessageFrame.envelope where !heardPeer:
            let verdict = hooks.authenticated ? hooks.incoming(message.content, peer) : .refused(.notAuthenticated)
            outcome.received = verdict
            let answer = MessageAnswer(verdict: verdict, envelope: message.content).encoded
            reply = [PostCardMessage(type: answer[0], content: Array(answer.dropFirst()))]
            state = .running(peer: peer, ours: ours, heardPeer: true)
        case MessageFrame.none where !heardPeer:
            state = .running(peer: peer, ours: ours, heardPeer: true)
        case MessageFrame.ack where ours != nil && outcome.sent == nil:
            guard let verdict = MessageAnswer(decoding: [message.type] + message.content)?.verdict(for: ours!.id) else {
                return interrupted(.unexpected(.malformedFrame("a malformed message acknowledgement")))
            }
            outcome.sent = verdict
        case MessageFrame.refusal where ours != nil && outcome.sent == nil:
            guard let verdict = MessageAnswer(decoding: [message.type] + message.content)?.verdict(for: ours!.id) else {
                return interrupted(.unexpected(.malformedFrame("a malformed message refusal")))
            }
            outcome.sent = verdict
        default:
            return interrupted(.unexpected(.unexpectedMessage("post-card message \(message.type) out of order in the message phase")))
        }
        if case .running(_, let ours, true) = state, ours == nil || outcome.sent != nil { state = .done }
        return reply
    }

    public func interrupted(_ reason: PostCardInterruption) -> [PostCardMessage] {
        state = .done
        switch reason {
        case .unexpected(let e), .broken(let e): outcome.failure = .protocolViolation(e)
        case .connectionLost(let why): outcome.failure = .connectionLost(why)
        }
        return []
    }
}
