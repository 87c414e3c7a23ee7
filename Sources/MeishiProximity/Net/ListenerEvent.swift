/// What a note listener (`meishi listen`) tells as it serves, as a value: the application words
/// each one (the `meishi` executable in Sources/meishi/NoteEvents.swift); no sentence is composed
/// here. Nothing a peer sent is in an event beyond its address (`from`; nil when the connection
/// was already gone and had none).
public enum ListenerEvent: Sendable, Equatable {
    /// A failure told at most a few times a second (a stranger's connections, probes, lost
    /// mailboxes): `untold` counts those of its kind left untold since the last.
    case summarised(Summarised, untold: Int)
    /// A contact's connection (past a hello with its tag) was refused, and why.
    case refused(from: String?, ListenerRefusal)
    /// Probes cannot be answered yet (the failure): tried again every `retrySeconds`; meanwhile
    /// senders need `--peer HOST:tcpPort`.
    case probesNotAnswered(MessageDeliveryFailure, retrySeconds: Int64, tcpPort: Int)
    /// Probes are answered again after a failure.
    case answeringProbes
    /// The probe socket ended (the system's words; nil: it closed): tried again in `retrySeconds`.
    case probesStopped(error: String?, retrySeconds: Int64)
    /// Probes are now answered on these interfaces too (they came up).
    case answeringProbesOn([String])
    /// `--relay`: a contact called on its mailbox while `maximum` calls were in hand: not answered.
    case callNotAnswered(maximum: Int)
    /// `--relay`: a contact called on its mailbox, but the transit relay did not connect us.
    case callFailed(MessageDeliveryFailure)

    /// The failures told at most a few times a second.
    public enum Summarised: Sendable, Equatable {
        /// A connection that never sent a hello with a known tag was refused.
        case refused(from: String?, ListenerRefusal)
        /// An idle connection was cut: it had sent no hello while others waited.
        case cutIdle(from: String?)
        /// A recognised probe from `from` was not answered.
        case probeIgnored(from: String, IgnoredProbe)
        /// `--relay`: a contact's mailbox was lost (the failure), opened again every `retrySeconds`.
        case mailboxLost(MessageDeliveryFailure, retrySeconds: Int)
    }

    /// Why a recognised probe was not answered.
    public enum IgnoredProbe: Sendable, Equatable {
        /// Its source sent more than `perSecond` a second.
        case tooMany(perSecond: Int)
        /// Its nonce was seen before.
        case replayed
        /// The answer could not be sent (the system's words).
        case unanswerable(error: String)
    }
}

/// Why a listener refused a connection (the sender is told a `MessageRefusal` only once the
/// handshake proved it a contact; these are what the listener's person reads).
public enum ListenerRefusal: Sendable, Equatable {
    /// Its first frame is not a message hello.
    case notAHello
    /// The sender is refused for this reason (an unknown tag: `unknownSender`, nothing sent).
    case message(MessageRefusal)
    /// The hello's Noise message did not open with the contact's key.
    case handshakeNotAuthenticated
    /// The hello's payload is not a time.
    case malformedHandshake
    /// The hello's time is more than `maximumSkew` seconds from ours (a replay, or a clock off).
    case staleHandshake(maximumSkew: Int64)
    /// The hello's ephemeral key was seen before.
    case replayedHandshake
    /// No sealed frame came after the handshake.
    case noMessage
    /// A pushed card or key rotation was refused for this reason.
    case card(MessageRefusal)
    /// A sealed frame of no type a listener takes.
    case unexpectedFrame
    /// A frame that broke the protocol (its reason as the wire names it, docs/PROTOCOL.md).
    case protocolViolation(ExchangeError)
    /// The connection failed (the system's words).
    case connectionLost(error: String)
}

/// A step of a note's delivery (`send`, `card push`), for `--verbose`.
public enum DeliveryStep: Sendable, Equatable {
    /// `--relay`: calling on the pair's mailbox of `day`, as `side`.
    case callingOnMailbox(MailboxURL, day: Int64, side: String)
    /// `--relay`: the listener answered; connecting to the transit relay.
    case listenerAnswered(TransitAddress)
    /// A probe answer from `from` did not prove the pair key: ignored.
    case ignoredAnswer(from: String)
}

extension QuietFailures where Failure == ListenerEvent.Summarised {
    convenience init(burst: Int, events: @escaping @Sendable (ListenerEvent) -> Void) {
        self.init(burst: burst) { failure, more in events(.summarised(failure, untold: more)) }
    }
}
