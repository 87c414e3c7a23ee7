import MeishiCard
import MeishiProximity
import MeishiText

/// `exchange`.
extension MeishiFailure {
    /// An exchange that did not finish.
    init(_ f: ExchangeFailure) {
        let text = if case .protocolFailure(let e) = f { ExchangeWording.describe(e) } else { ExchangeTransport.describe(f) }
        switch f {
        case .ambiguous:
            self.init(text, hint: "agree on a code and run 'meishi exchange --code CODE' on both sides", status: .unavailable)
        case .noPeer:
            self.init(text, hint: "is the other side running 'meishi exchange'? if the network keeps devices apart, both add --code CODE --relay "
                      + "(through magic-wormhole's servers), or use --listen and --peer HOST:PORT",
                      status: .timedOut)
        case .noSuchInterface(_, let available):
            self.init(text, hint: "interfaces here: \(available.joined(separator: ", "))", status: .usage)
        case .interfaceCannotMulticast(let name):
            self.init(text, hint: name == "lo" ? "on one machine use 'meishi exchange --listen' and '--peer 127.0.0.1', or enable it: ip link set lo multicast on"
                                               : "pick another --interface, or use --listen and --peer HOST", status: .usage)
        case .tooManyGuesses:
            self.init(text, hint: "move somewhere quieter, or use --listen and --peer with the other person's address", status: .protocolError)
        case .addressInUse:
            self.init(text, hint: "is another 'meishi exchange --listen' running? use --port 0 for any free port", status: .unavailable)
        case .unknownHost:
            self.init(text, hint: "check the name, or give the other machine's IP address", status: .noInput)
        case .timedOut: self.init(text + "; nothing was stored", hint: "start both sides within --timeout, or raise it", status: .timedOut)
        case .unreachable: self.init(text, hint: "is 'meishi exchange --listen' running there, and the port open?", status: .unavailable)
        case .declinedLocally, .protocolFailure(.declinedByPeer):
            self.init(text + "; nothing was stored on either side", status: .failure)
        case .unanswered, .protocolFailure(.peerDidNotAnswer):
            self.init(text + "; nothing was stored on either side", hint: "run both sides again and answer the question about the code",
                      status: .timedOut)
        case .protocolFailure(.codesDoNotMatch):
            self.init(text + "; nothing was stored", hint: "check the code with the other person and run both sides again", status: .dataError)
        case .protocolFailure(.codeExpected), .protocolFailure(.codeNotExpected):
            self.init(text + "; nothing was stored", status: .usage)
        case .protocolFailure: self.init(text + "; nothing was stored", status: .dataError)
        case .connectionLost: self.init(text + "; nothing was stored", status: .unavailable)
        case .io: self.init(text, status: .failure)
        case .relay(let r): self.init(relay: r, text: text)
        }
    }

    /// A failure that names --timeout's value (the person here did not answer within it).
    init(_ f: ExchangeFailure, timeout: Int64) {
        self.init(f)
        if case .unanswered = f { message = message.replacingOccurrences(of: "your answer", with: "your answer (--timeout \(timeout)s)") }
    }

    /// A failure of `--listen`, whose hints cannot propose --listen again.
    init(listening f: ExchangeFailure) {
        self.init(f)
        if case .tooManyGuesses = f {
            hint = "run --listen again somewhere quieter, or on another --port, and tell only the other person the address to give --peer"
        }
    }

    /// `--relay`: the mailbox server or the transit relay.
    init(relay r: RelayFailure, text: String) {
        switch r {
        case .mailboxUnreachable:
            self.init(text, hint: "--relay needs the internet, or a mailbox server given as --relay ws://HOST:PORT/v1", status: .unavailable)
        case .notAMailbox, .refusedByMailbox, .mailboxLost:
            self.init(text + "; nothing was stored", hint: "check the --relay URL (a magic-wormhole mailbox server, ws://HOST:PORT/v1)",
                      status: .unavailable)
        case .nameplateTaken:
            self.init(text + "; nothing was stored", hint: "make a new code with 'meishi exchange --code --relay' and read it out again",
                      status: .protocolError)
        case .peerNeverCame:
            self.init(text + "; nothing was stored",
                      hint: "run 'meishi exchange --code CODE --relay' with the same code and servers on the other machine within --timeout",
                      status: .timedOut)
        case .peerNotMeishi:
            self.init(text + "; nothing was stored", hint: "make a new code and run both sides again", status: .protocolError)
        case .transitUnreachable, .transitRefused:
            self.init(text + "; nothing was stored", hint: "check --transit tcp:HOST:PORT (a magic-wormhole transit relay)", status: .unavailable)
        }
    }

    /// `--peer HOST:PORT` whose port is a number but not a port.
    static func peerPortOutOfRange(_ port: Int) -> String {
        port == 0 ? "--peer needs the other side's port, 1 to 65535, not 0 (port 0 means 'any free port' only when listening)"
                  : "--peer port must be 1 to 65535, not \(port)"
    }
}

/// The words of the exchange's typed failures that the library leaves to the executable. (What
/// the peer is told is `wireReason`, fixed by docs/PROTOCOL.md; these are for the person here.)
enum ExchangeWording {
    /// A protocol failure of the session.
    static func describe(_ e: ExchangeError) -> String {
        switch e {
        case .frameTooLarge(let n): "peer sent a \(n)-byte frame (limit \(FrameCodec.maximumBody))"
        case .malformedFrame(let why): "malformed frame: \(why)"
        case .unsupportedVersion(let v): "peer speaks exchange protocol version \(v); this meishi speaks 1"
        case .unexpectedMessage(let what): "protocol violation: \(what)"
        case .commitmentMismatch: "the peer's key does not match its commitment (handshake tampered with)"
        case .weakKey: "the peer sent a weak ephemeral key"
        case .badAuthentication: "a message failed authentication (tampered, replayed or out of order)"
        case .declinedByPeer: "the other person said the codes differ"
        case .peerDidNotAnswer: "the other person did not answer"
        // Escaped here, not only by Console: a table's report puts this in a block of lines (`out.line`).
        case .invalidCard(let e): "the peer's card is invalid: \(TerminalText.sanitized(e.reason))"
        case .bindingInvalid: "the peer's card is not bound to this session (replayed from another exchange?)"
        case .rejectedByPeer(let why): "the peer refused our card: \(TerminalText.sanitized(why))"
        case .codesDoNotMatch: "the codes do not match"
        case .codeExpected: "the other side did not use --code (both sides need the same code)"
        case .codeNotExpected: "the other side used --code; use the same --code here"
        }
    }

    /// A comparison that failed.
    static func describe(_ e: CommonFriendsError) -> String {
        switch e {
        case .protocolViolation(let e): describe(e)
        case .refused(.invalidPoint(let i)): "item \(i) of the peer's list is not a valid group element"
        case .refused(.duplicate(let i)): "item \(i) of the peer's list repeats an earlier one"
        case .refused(.wrongCount(let expected, let actual)): "the peer's list holds \(actual) items where it announced \(expected)"
        case .refused(.commitmentMismatch): "the peer's returned list does not match its commitment"
        case .refused(.proofInvalid): "the peer's proof does not verify (its list was reordered, substituted or made with another key)"
        case .abortedByPeer(let why): "the peer stopped: \(TerminalText.sanitized(why))"
        case .connection(let loss): ExchangeTransport.describe(.connectionLost(loss))
        }
    }

    /// Why our note could not be sealed, as `meishi send` says it.
    static func describe(_ e: MessageEnvelopeError) -> String {
        MeishiFailure(e).message
    }
}
