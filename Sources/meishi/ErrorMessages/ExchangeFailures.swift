import MeishiProximity

/// `exchange`.
extension MeishiFailure {
    /// An exchange that did not finish.
    init(_ f: ExchangeFailure) {
        let text = ExchangeTransport.describe(f)
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
