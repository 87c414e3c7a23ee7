import MeishiCard
import MeishiCrypto

/// Post-card phase 2 of an exchange: one message each way (docs/PROTOCOL.md §9.6).
///
/// After the common-friends phase each side sends one sealed frame, ENVELOPE (`0x60` ‖ envelope)
/// or NONE (`0x63`), and answers the peer's ENVELOPE with ACK (`0x61` ‖ id ‖ 0/1) or REFUSE
/// (`0x62` ‖ reason). The session's channel is already authenticated and sealed; the envelope is
/// the same `crypto_box` as `meishi send` uses, so it is stored sealed and stays deniable.
public struct ExchangeMessages: Sendable {
    /// Our envelope for the peer whose card just verified, or nil for none.
    public var outgoing: @Sendable (VerifiedCard) throws -> MessageEnvelope?
    /// Checks and stores the peer's envelope (the card has been verified and acknowledged).
    public var incoming: @Sendable ([UInt8], VerifiedCard) -> MessageVerdict
    /// Whether this side's session was authenticated (a code, or digits a person compared):
    /// without it nothing is sent and a received envelope is refused.
    public var authenticated: Bool

    public init(authenticated: Bool, outgoing: @escaping @Sendable (VerifiedCard) throws -> MessageEnvelope?,
                incoming: @escaping @Sendable ([UInt8], VerifiedCard) -> MessageVerdict) {
        self.authenticated = authenticated
        self.outgoing = outgoing
        self.incoming = incoming
    }
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
    public var failure: String?
}

extension ExchangeTransport {
    /// Runs the message phase on an exchanged session; whatever the peer does, returns an outcome.
    static func messagePhase(_ phase: ExchangeMessages, session: ExchangeSession, send: ([[UInt8]]) async throws -> Void,
                             next: (String) async throws -> ExchangeSession.Event?) async -> ExchangeMessageOutcome {
        var outcome = ExchangeMessageOutcome()
        let peer = session.peerCard!
        do {
            var envelope: MessageEnvelope?
            do {
                envelope = try phase.outgoing(peer)
            } catch {
                outcome.failure = "our message could not be sealed (\(error))"
            }
            if envelope != nil, !phase.authenticated {
                outcome.withheld = true
                envelope = nil
            }
            outcome.sentEnvelope = envelope
            try await send([envelope.map { session.postCard(type: MessageFrame.envelope, content: $0.encoded) }
                            ?? session.postCard(type: MessageFrame.none, content: [])])
            var heardPeer = false
            while !heardPeer || (envelope != nil && outcome.sent == nil) {
                guard case .postCard(let type, let content)? = try await next("the peer's message") else {
                    throw ExchangeError.unexpectedMessage("a message outside the message phase")
                }
                switch type {
                case MessageFrame.envelope where !heardPeer:
                    heardPeer = true
                    let verdict = phase.authenticated ? phase.incoming(content, peer) : .refused(.notAuthenticated)
                    outcome.received = verdict
                    switch verdict {
                    case .stored, .duplicate:
                        let id = (try? MessageEnvelope(parsing: content))?.id ?? []
                        try await send([session.postCard(type: MessageFrame.ack, content: id + [verdict == .duplicate ? 1 : 0])])
                    case .refused(let reason):
                        try await send([session.postCard(type: MessageFrame.refusal, content: [reason.rawValue])])
                    }
                case MessageFrame.none where !heardPeer:
                    heardPeer = true
                case MessageFrame.ack where envelope != nil && outcome.sent == nil:
                    guard content.count == MessageEnvelope.idByteCount + 1, Array(content.prefix(MessageEnvelope.idByteCount)) == envelope!.id,
                          content.last! <= 1 else { throw ExchangeError.malformedFrame("a malformed message acknowledgement") }
                    outcome.sent = content.last! == 1 ? .duplicate : .stored
                case MessageFrame.refusal where envelope != nil && outcome.sent == nil:
                    guard content.count == 1, let reason = MessageRefusal(rawValue: content[0]) else {
                        throw ExchangeError.malformedFrame("a malformed message refusal")
                    }
                    outcome.sent = .refused(reason)
                default:
                    throw ExchangeError.unexpectedMessage("post-card message \(type) out of order in the message phase")
                }
            }
        } catch let e as ExchangeError {
            outcome.failure = e.description
        } catch let e as ExchangeFailure {
            outcome.failure = describe(e)
        } catch {
            outcome.failure = "connection lost (\(error))"
        }
        return outcome
    }
}
