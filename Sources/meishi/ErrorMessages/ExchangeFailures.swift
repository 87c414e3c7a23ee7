import MeishiCard
import MeishiProximity

/// `exchange`.
extension MeishiFailure {
    /// An exchange that did not finish.
    init(_ f: ExchangeFailure) {
        let text = ExchangeWording.describe(f)
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
        case .protocolFailure:
            self.init(text + "; nothing was stored", hint: "run both sides again; if it happens again, someone else may be answering in the other person's place",
                      status: .dataError)
        case .connectionLost, .notChosen: self.init(text + "; nothing was stored", status: .unavailable)
        case .io: self.init(text, status: .failure)
        case .relay(let r): self.init(relay: r, text: text)
        case .ownCard: self.init(text + "; nothing was stored", hint: "each meishi of yours swaps with the others; yours need no swapping", status: .dataError)
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

    /// `--table CODE` with a code an earlier table here used: whoever heard it read out then could join.
    init(spentTableCode code: String, at: Int64) {
        self.init("code \(code) was used at a table on \(CardRendering.date(at)); a table's code serves one table",
                  hint: "make a new code with 'meishi exchange --table' and read it out", status: .usage)
    }

    /// `--peer HOST:PORT` whose port is a number but not a port.
    static func peerPortOutOfRange(_ port: Int) -> String {
        port == 0 ? "--peer needs the other side's port, 1 to 65535, not 0 (port 0 means 'any free port' only when listening)"
                  : "--peer port must be 1 to 65535, not \(port)"
    }
}

/// The words of the exchange's typed failures that the library leaves to the executable. (What
/// the peer is told is `wireReason`, fixed by docs/PROTOCOL.md; these are for the person here.)
/// Peer text is quoted as it came, as in every other command's failures: `Console` escapes it
/// for a terminal (a line inside a block passes `Console.safe`), `--json` through `JSONText`.
enum ExchangeWording {
    /// Why an exchange did not finish.
    static func describe(_ f: ExchangeFailure) -> String {
        switch f {
        case .ambiguous(let peers): "\(peers.count) peers are announcing: "
            + peers.map { "\($0.host) (\($0.announcement.alias ?? "no alias"))" }.joined(separator: ", ")
        case .noPeer(let withCode): withCode ? "no peer announced the same code" : "no other meishi announced itself on the network"
        case .noSuchInterface(let name, _): "there is no network interface named \(name)"
        case .interfaceCannotMulticast(let name): "interface \(name) cannot send multicast, so peers cannot find each other on it"
        case .addressInUse(let port): "port \(port) is already in use on this machine"
        case .unknownHost(let host): "cannot find the host \(host)"
        case .tooManyGuesses(let n): "\(n) pairings were started and abandoned after the code was shown: someone may be interfering; nothing was stored"
        case .timedOut(let t): "timed out: " + describe(t)
        case .unreachable(let u): describe(u)
        case .protocolFailure(let e): describe(e)
        case .declinedLocally: "the code was not confirmed"
        case .unanswered: "timed out waiting for your answer"
        case .connectionLost(let loss): "connection lost " + describe(loss)
        case .io(let problem): describe(problem)
        case .relay(let r): RelayWording.describe(r)
        case .ownCard: "that is your own card (another meishi of yours at this table); not stored"
        case .notChosen: "the connection did not introduce the peer discovery chose"
        }
    }

    static func describe(_ t: ExchangeFailure.Timeout) -> String {
        switch t {
        case .noPeerCompleted: "no peer completed an exchange"
        case .nobodyAnswered(let peer, let problem): "nobody answered at \(peer)" + (problem == .noAnswer ? "" : ": \(describe(problem))")
        }
    }

    static func describe(_ u: ExchangeFailure.Unreachable) -> String {
        switch u {
        case .cannotConnect(let peer, let problem): "cannot connect to \(peer): \(describe(problem))"
        case .noTriesLeft(let peer): "\(peer): no tries left while another pairing is in progress"
        case .anotherPairingPastHandshake: "another pairing is already past its handshake"
        case .noUsableInterface(let name): "no usable interface named \(name)"
        case .noMulticastInterface: "no network interface supports multicast"
        case .noLANInterface(let leftOut):
            "no LAN interface to announce on (left out: \(leftOut.joined(separator: ", ")); name one with --interface)"
        case .tableMemberNeverPaired: "announced the table, but no pairing with it completed"
        }
    }

    /// A connection attempt's last error.
    static func describe(_ p: ExchangeFailure.ConnectProblem) -> String {
        switch p {
        case .refused: "connection refused (nothing is listening on that port)"
        case .noRoute: "no route to that host"
        case .noAnswer: "no answer"
        case .other(let error): error
        }
    }

    static func describe(_ p: ExchangeFailure.IOProblem) -> String {
        switch p {
        case .cannotListen(let host, let port, let error): "cannot listen on \(host):\(port): \(error)"
        case .listenerFailed(let error): "listener failed: \(error)"
        case .cannotListInterfaces(let error): "cannot list network interfaces: \(error)"
        case .cannotJoinGroup(let group, let port, let error): "cannot join the multicast group \(group):\(port): \(error)"
        case .cannotJoinIPv6Group(let error): "cannot join the IPv6 multicast group: \(error)"
        case .cannotListenUDP(let port, let error): "cannot listen on UDP port \(port): \(error)"
        case .cannotSendToGroup(let group, let port, let error): "cannot send to the multicast group \(group):\(port): \(error)"
        case .other(let error): error
        }
    }

    /// A lost connection, after "connection lost ".
    static func describe(_ loss: ConnectionLoss) -> String {
        switch loss {
        case .closed(let step): "before \(describe(step))"
        case .timedOut(let step): "(timed out waiting for \(describe(step)))"
        case .failed(let problem): "(\(describe(problem)))"
        }
    }

    /// How a socket failed.
    static func describe(_ p: SocketProblem) -> String {
        switch p {
        case .reset: "the other side reset the connection"
        case .other(let error): error
        }
    }

    /// What the session waited for.
    static func describe(_ step: SessionStep) -> String {
        switch step {
        case .handshake: "the handshake"
        case .confirmation: "the other person's confirmation"
        case .card: "the peer's card"
        case .acknowledgement: "the peer's acknowledgement"
        case .phase(let name): "the peer's \(name)"
        }
    }

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
        case .invalidCard(let e): "the peer's card is invalid: \(e.reason)"
        case .bindingInvalid: "the peer's card is not bound to this session (replayed from another exchange?)"
        case .rejectedByPeer(let why): "the peer refused our card: \(why)"
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
        case .abortedByPeer(let why): "the peer stopped: \(why)"
        case .connection(let loss): describe(.connectionLost(loss))
        }
    }

    /// Why our note could not be sealed, as `meishi send` says it.
    static func describe(_ e: MessageEnvelopeError) -> String {
        MeishiFailure(e).message
    }
}
