import MeishiProximity
import MeishiText

/// `--relay`: the mailbox server and the transit relay, for `exchange`, `send`, `listen` and
/// `card push` alike.
extension MeishiFailure {
    /// An exchange through the relay that did not finish (`text`: the failure's words).
    init(relay r: RelayFailure, text: String) {
        switch r {
        case .mailboxUnreachable:
            self.init(text, hint: "--relay needs the internet, or a mailbox server given as --relay ws://HOST:PORT/v1", status: .unavailable)
        case .refusedByMailbox(.messageTooLarge):
            self.init(text + "; nothing was stored", hint: "make a new code and run both sides again", status: .protocolError)
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
        case .sessionLost:
            self.init(text + "; nothing was stored", hint: "the relay or the network dropped the session: run both sides again", status: .unavailable)
        }
    }
}

/// The words of the relay's typed failures (`RelayFailure`), the same for the exchange and the
/// notes. Text the mailbox server or the transit relay sent is escaped for a terminal here.
enum RelayWording {
    static func describe(_ r: RelayFailure) -> String {
        switch r {
        case .mailboxUnreachable(let url, let problem):
            "the mailbox server is unreachable: cannot connect to \(url): \(ExchangeWording.describe(problem))"
        case .notAMailbox(let url, nil): "\(url) did not accept a WebSocket"
        case .notAMailbox(let url, let problem?): "\(url) did not answer as a mailbox server: \(ExchangeWording.describe(problem))"
        case .nameplateTaken(let n): "nameplate \(n) is taken on the mailbox server: two others are using the number of this code"
        case .refusedByMailbox(.messageTooLarge(let n)):
            "the mailbox server sent a message over \(n / 1024) KiB (the other side's, or its own)"
        case .refusedByMailbox(let refusal): "the mailbox server refused: \(describe(refusal))"
        case .mailboxLost(let loss): "lost the mailbox server: \(describe(loss))"
        case .peerNeverCame(let n): "nobody else came to nameplate \(n) on the mailbox server"
        case .peerNotMeishi: "the other side on the mailbox does not speak meishi's relay protocol"
        case .transitUnreachable(let address, let problem):
            "the transit relay is unreachable: cannot connect to \(address): \(ExchangeWording.describe(problem))"
        case .transitRefused(let refusal): "the transit relay did not pair us: \(describe(refusal))"
        case .sessionLost(let path, let loss): "lost \(path) " + ExchangeWording.describe(loss)
        }
    }

    static func describe(_ r: MailboxRefusal) -> String {
        switch r {
        case .said(let words): TerminalText.sanitized(words)
        case .notAMailboxMessage: "it sent something that is not a mailbox message"
        case .badClaim: "it sent a second or malformed 'claimed'"
        case .noWelcome: "it did not welcome us"
        case .messageTooLarge(let n): "it sent a message over \(n / 1024) KiB"
        }
    }

    static func describe(_ loss: MailboxLoss) -> String {
        switch loss {
        case .closed(nil): "it closed the connection"
        case .closed(.otherSide?): "it closed the connection before the other side came"
        case .closed(.listener?): "it closed the connection before the listener answered"
        case .closed(.welcome?): "it closed the connection before welcoming us"
        case .failed(let problem): ExchangeWording.describe(problem)
        case .noWelcome(let seconds): "no welcome within \(seconds) s"
        case .lost: "the connection was lost"
        }
    }

    static func describe(_ r: TransitRefusal) -> String {
        switch r {
        case .answered(let line): "it answered '\(TerminalText.sanitized(line))'"
        case .notARelayLine: "it answered something that is not a transit relay's line"
        case .closedBeforePairing: "it closed the connection before pairing us"
        case .nobodyPairedInTime: "neither a direct connection nor the relay paired us in time"
        }
    }
}
