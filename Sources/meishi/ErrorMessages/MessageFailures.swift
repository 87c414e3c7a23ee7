import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiText

/// Ephemeral messages: a note refused before sending, and a delivery that failed.
extension MeishiFailure {
    /// A note that cannot go to a contact (`init(_: MeishiError)` routes them here).
    init(message e: MeishiError) {
        switch e {
        case .cannotMessage(let id, let name, .unsigned):
            self.init("#\(id) \(name) is an unsigned contact: a message needs the key of a signed card",
                      hint: "swap cards with 'meishi exchange' first", status: .dataError)
        case .cannotMessage(let id, let name, .noKey):
            self.init("#\(id) \(name) has no message key on their card", hint: "swap cards with 'meishi exchange' again", status: .dataError)
        case .cannotMessage(_, let did, .yourself):
            self.init("\(did) is your own identity: a note goes to a contact", hint: "list your contacts with 'meishi contacts list'",
                      status: .usage)
        default: preconditionFailure("not a message failure: \(e)")
        }
    }

    /// A note on standard input longer than could be read (its size is not known).
    static let noteOverLimit = MeishiFailure("the note on standard input is over the \(MessageEnvelope.maximumTextBytes)-byte limit",
                                             hint: "shorten it, or send a link to the rest", status: .dataError)

    init(_ e: MessageEnvelopeError) {
        switch e {
        case .textTooLong(let n):
            self.init("the note is \(n) bytes, over the \(MessageEnvelope.maximumTextBytes)-byte limit",
                      hint: "shorten it, or send a link to the rest", status: .dataError)
        case .emptyText: self.init("the note is empty", status: .dataError)
        case .nulCharacter: self.init("the note holds a NUL character", status: .dataError)
        case .badLifetime(let s): self.init("a message lives 1 s to 7 days, not \(s) s", hint: "pass --ttl 1h, 24h or 7d", status: .usage)
        case .tooLarge(let n): self.init("the message is \(n) bytes, over the \(MessageEnvelope.maximumSize)-byte limit", status: .dataError)
        case .malformed(let why): self.init("not a meishi message: \(why)", status: .dataError)
        case .authenticationFailed: self.init("the message does not open: not sealed by its sender for you", status: .dataError)
        }
    }

    /// Where no probe can go: `--peer`, and how a link-local IPv6 address is written.
    static let peerHint = "give the listener's address with --peer HOST:PORT (its 'meishi listen' prints the port; "
        + "a link-local IPv6 address with its interface, as --peer '[fe80::1%eth0]:47825')"

    static let linkLocalHint = "add the interface this machine reaches it on ('ip -6 addr' lists them), as --peer '[fe80::1%eth0]:47825'"

    /// `--peer` is a link-local IPv6 address without its interface: said before anything is read or asked.
    static func linkLocalPeer(_ host: String) -> MeishiFailure {
        MeishiFailure(NoteWording.describe(.linkLocalWithoutInterface(host)), hint: linkLocalHint, status: .usage)
    }

    /// Nothing answered at `send --peer`: the multicast hint would not help.
    static func notDeliveredToPeer(_ why: MessageDeliveryFailure.Undelivered) -> MeishiFailure {
        MeishiFailure(NoteWording.describe(.notDelivered(why)),
                      hint: "is 'meishi listen' running there, on that port? it prints its port when it starts", status: .notDelivered)
    }

    /// Nobody answered on the pair's mailbox at `send --relay`.
    static func notDeliveredThroughRelay(_ why: MessageDeliveryFailure.Undelivered) -> MeishiFailure {
        MeishiFailure(NoteWording.describe(.notDelivered(why)),
                      hint: "is 'meishi listen --relay' running on the other machine, with the same mailbox server?", status: .notDelivered)
    }

    init(_ f: MessageDeliveryFailure) {
        let text = NoteWording.describe(f)
        switch f {
        case .notDelivered:
            self.init(text, hint: "is 'meishi listen' running on the other machine? where multicast is blocked, use --peer HOST:PORT",
                      status: .notDelivered)
        case .refused(.unknownSender), .refused(.unsignedSender):
            self.init(text, hint: "they need your signed card first: swap cards with 'meishi exchange'", status: .dataError)
        case .refused(.expired): self.init(text, hint: "check this computer's clock", status: .dataError)
        case .refused: self.init(text, status: .dataError)
        case .handshakeFailed: self.init(text, hint: "someone else may be listening at that address", status: .protocolError)
        case .unknownHost: self.init(text, hint: "check the name, or give the other machine's IP address", status: .noInput)
        // Trial 7, F21: an IPv6-only network. The listener says the same ("senders need --peer").
        case .noMulticastInterface:
            self.init("cannot look for the listener: \(text)", hint: Self.peerHint, status: .unavailable)
        case .linkLocalWithoutInterface: self.init(text, hint: Self.linkLocalHint, status: .usage)
        case .addressInUse: self.init(text, hint: "is another 'meishi listen' running? use --port 0 for any free port", status: .unavailable)
        case .io: self.init(text, status: .failure)
        case .relay(.mailboxUnreachable):
            self.init(text, hint: "--relay needs the internet, or a mailbox server given as --relay ws://HOST:PORT/v1", status: .unavailable)
        case .relay(.transitUnreachable), .relay(.transitRefused):
            self.init(text, hint: "check --transit tcp:HOST:PORT (a magic-wormhole transit relay)", status: .unavailable)
        case .relay:
            self.init(text, hint: "check the --relay URL (a magic-wormhole mailbox server, ws://HOST:PORT/v1)", status: .unavailable)
        }
    }
}

/// The words of message delivery's typed failures and outcomes (`send`, `listen`, `card push`,
/// and the notes of an exchange).
enum NoteWording {
    /// Why a note or a pushed card was not delivered.
    static func describe(_ f: MessageDeliveryFailure) -> String {
        switch f {
        case .notDelivered(let why): "not delivered: \(describe(why))"
        case .refused(let r): "refused by the recipient: \(describe(r))"
        case .handshakeFailed(let why): "the peer did not prove it is that contact: \(describe(why))"
        case .unknownHost(let h): "cannot find the host \(TerminalText.sanitized(h))"
        case .noMulticastInterface: "no IPv4 network interface supports multicast"
        case .linkLocalWithoutInterface(let h): "\(h) is a link-local address, which needs the interface it is on (as \(h)%eth0)"
        case .addressInUse(let p): "port \(p) is already in use on this machine"
        case .io(let problem): ExchangeWording.describe(problem)
        case .relay(let r): RelayWording.describe(r)
        }
    }

    static func describe(_ u: MessageDeliveryFailure.Undelivered) -> String {
        switch u {
        case .noListenerAnswered: "no listener answered for this contact"
        case .noListenerOnMailbox: "no listener answered through the mailbox server for this contact"
        case .cannotConnect(let to, let problem):
            "cannot connect to \(describe(to)): \(ExchangeWording.describe(problem).isEmpty ? "no answer" : ExchangeWording.describe(problem))"
        case .hungUp(let at): "\(describe(at)) hung up without answering (not a contact that knows us, or a stale clock)"
        case .notAcknowledged(let at, let card): "\(describe(at)) did not acknowledge \(card ? "the card" : "the message")"
        case .noAnswerInTime(let at): "\(describe(at)) did not answer in time"
        case .connectionLost(let to, let error): "connection to \(describe(to)) lost (\(error))"
        }
    }

    static func describe(_ p: MessageDeliveryFailure.HandshakeProblem) -> String {
        switch p {
        case .malformedAcknowledgement: "a malformed acknowledgement"
        case .unexpectedAnswer: "unexpected answer"
        case .didNotVerify: "the handshake did not verify"
        }
    }

    /// Where a note went: the listener's address, or the transit relay it went through.
    static func describe(_ a: NoteAddress) -> String {
        switch a {
        case .listener(let address): address
        case .transitRelay(let transit): "the transit relay \(transit)"
        }
    }

    /// Why a receiver refused a note, a card or a key rotation.
    static func describe(_ r: MessageRefusal) -> String {
        switch r {
        case .unknownSender: "unknown sender"
        case .wrongRecipient: "the message is for someone else"
        case .authenticationFailed: "failed authentication"
        case .expired: "expired"
        case .oversized: "oversized"
        case .unsignedSender: "the sender is an unsigned contact there"
        case .malformed: "malformed message"
        case .storeFailed: "the recipient could not store it"
        case .notAuthenticated: "the exchange was not authenticated there (--yes without a code)"
        case .otherDID: "the card is another person's"
        case .notNewer: "not newer than the card held there"
        case .invalidCard: "the card did not verify"
        case .superseded: "that key was replaced there by a later one"
        case .invalidRotation: "the key rotation did not verify"
        case .rotationOfUnknownKey: "the key rotation is for a key not held there"
        case .rotationApplied: "the key rotation was applied there before"
        }
    }
}

/// Living cards (issue 26): `card push`.
extension MeishiFailure {
    static let nobodyToPushTo = MeishiFailure("no contact holds a card of yours to update",
                                              hint: "name contacts ('meishi card push ken'), or swap cards with 'meishi exchange' first",
                                              status: .usage)
}

/// `listen`.
extension MeishiFailure {
    /// A listener that had not ended `seconds` after Ctrl-C or SIGTERM (nil: at a second one), left
    /// behind: with --relay, a mailbox server that accepts connections and never answers holds it.
    init(listenerHeldAfterStop seconds: Double?, relay: RelayServers?) {
        let waitingOn = relay.map { "the mailbox server \($0.mailbox)" } ?? "the network"
        self.init("stopped without ending cleanly: " + (seconds.map { "\(Int($0)) s after the signal" } ?? "at the second signal")
                  + " the listener was still waiting on \(waitingOn); the notes received until then are stored",
                  hint: relay.map { _ in "a mailbox server that accepts connections but never answers does this: check --relay" },
                  status: .unavailable)
    }
}
