import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiText

struct Exchange: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "exchange",
        abstract: "Swap signed cards with a nearby person over the network.",
        discussion: """
            Run 'meishi exchange' on both machines: they find each other by UDP multicast on the local \
            network (group 239.255.77.23, port 47824, TTL 1), announcing only a random session id and a \
            port. Where multicast is blocked, one side runs 'meishi exchange --listen', the other \
            'meishi exchange --peer HOST'. Both screens then show a 6-digit code; each person checks that \
            the other screen shows the same code and answers y. Or one person runs 'meishi exchange --code', \
            reads out the code it prints (such as 7-tulip-anchor) and the other runs 'meishi exchange --code \
            7-tulip-anchor': the code authenticates the exchange (a PAKE: nothing to compare, a wrong code \
            fails, no guess can be checked offline) and works with --listen/--peer too. Only then are the \
            signed cards sent, verified (signature, DID, binding to this session, signed within --max-skew) \
            and, once both sides have acknowledged, stored with trust 'met'. A mismatch or a 'no' stores \
            nothing on either side. Three pairings abandoned after a code could be computed end the run with \
            exit 76: someone may be trying codes.

            At a meetup, one person runs 'meishi exchange --table' and reads out the code it prints; everyone \
            else runs 'meishi exchange --table CODE'. Everyone swaps cards with everyone else (each pair runs \
            the --code exchange), each screen shows people as they join, and the run ends with --expect N \
            people (you included), Enter, Ctrl-D or Ctrl-C, or --timeout, listing everyone stored and every \
            pairing that failed. Three failed pairings close the table (exit 76). A code serves one table: \
            once its table paired someone, it is refused (exit 64).

            Where the network keeps the two machines apart (client isolation, different networks), both \
            add --relay to --code: they meet on a magic-wormhole mailbox server by the code's number and \
            run the same session through its transit relay. Without --relay no server is contacted.

            Examples:
              meishi exchange
              meishi exchange --code
              meishi exchange --table 7-tulip-anchor --expect 6
              meishi exchange --event "PyCon JP 2026"
              meishi exchange --code 7-tulip-anchor --relay
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Wait for the other person to connect.")
    var listen = false

    @Option(help: "Port for --listen (0: any free port).")
    var port: Int = ExchangeTransport.defaultPort

    @Option(help: ArgumentHelp("Connect to a listening peer (the port defaults to 47823; IPv6 with a port in brackets).", valueName: "host[:port]"))
    var peer: String?

    @Option(help: ArgumentHelp("Authenticate with a code both people type, N-word-word (alone: make one up and print it).",
                               discussion: "Only N crosses the network, as a hint for whom to try; the words are the password of a PAKE.",
                               valueName: "code"),
            completion: .custom(CodeCompletion.words), transform: CodeArgument.init)
    var code: CodeArgument?

    /// `--code` as typed, parsed once (the argument parser calls `init`): `validate` refuses a
    /// `.refused`, `run` uses the rest.
    enum CodeArgument: Sendable {
        /// `--code` alone: make one up (a new one on every call of `resolveCode`).
        case generate
        /// A code, and the words read as list words (a typo corrected, said once the run starts).
        case given(ExchangeCode, corrections: [ExchangeCode.Correction])
        case refused(ExchangeCodeError)

        /// An empty value is what `expandingBareCode` gives a bare `--code`; a word one typo from
        /// a list word is read as that word.
        init(_ text: String) {
            if text.isEmpty {
                self = .generate
            } else {
                let (corrected, corrections) = ExchangeCode.correcting(text)
                do { self = .given(try ExchangeCode(parsing: corrected), corrections: corrections) } catch { self = .refused(error) }
            }
        }
    }

    /// `--code` with no value (last, or followed by another option) asks for a new code, and
    /// `--relay` with none for the configured or public mailbox server: the argument parser needs
    /// a value, so this gives each an empty one (`CodeArgument.generate`, `relayServers`).
    static func expandingBareCode(_ arguments: [String]) -> [String] {
        guard arguments.first == "exchange" || arguments.contains("exchange") else { return arguments }
        var out: [String] = []
        for (n, a) in arguments.enumerated() {
            out.append(a)
            if a == "--code" || a == "--table" || a == "--relay", n + 1 == arguments.count || arguments[n + 1].hasPrefix("-") { out.append("") }
        }
        return out
    }

    /// The code to use: as typed (a word one typo from a list word read as that word), or made up
    /// for a bare `--code` (a new one on every call: call it once per run).
    func resolveCode() -> ExchangeCode? {
        switch code ?? table {
        case .generate?: ExchangeCode.random()
        case .given(let code, _)?: code
        case .refused?, nil: nil
        }
    }

    @Option(help: ArgumentHelp("Swap cards with everyone who runs --table with this code (alone: make one up and print it).",
                               discussion: "Everyone at the table stores everyone else as 'met'. Only N crosses the network; the words are the password of each pair's PAKE.",
                               valueName: "code"),
            completion: .custom(CodeCompletion.words), transform: CodeArgument.init)
    var table: CodeArgument?

    @Option(help: ArgumentHelp("With --table: end once this many people, you included, are in.", valueName: "n"))
    var expect: Int?

    @Option(help: ArgumentHelp("With --code: meet through a magic-wormhole mailbox server and transit relay (alone: the configured or the public one).",
                               discussion: "For networks that keep devices apart. Needs the internet (or your own servers); the servers see the code's number, who connects and when, and sizes, never a card or the code's words.",
                               valueName: "url"))
    var relay: String?

    @Option(help: ArgumentHelp("With --relay: the transit relay to carry the session (default: the configured or the public one).", valueName: "tcp:host:port"))
    var transit: String?

    @Flag(name: .customLong("no-direct"), help: ArgumentHelp("With --relay: carry the session through the transit relay only.", discussion:
        "By default each side also offers the other its IPv4 addresses (seen by the other side and the mailbox server) and the first connection to complete, direct or relayed, is used."))
    var noDirect = false

    @Option(help: ArgumentHelp("A name to show other peers when several are around (off by default).", valueName: "alias"))
    var alias: String?

    @Option(name: .customLong("interface"), help: ArgumentHelp("Announce and listen only on this network interface.", discussion:
        "By default every LAN interface: not Docker or libvirt bridges, VPN tunnels, tun/tap devices or bridge ports (--verbose says which were left out).",
        valueName: "name"))
    var interfaceName: String?

    @Flag(help: ArgumentHelp("Do not ask to compare the code.", discussion:
        "For scripts and tests. Without a person comparing codes, nothing stops a machine in the middle from swapping cards: contacts are stored as 'signed', not 'met'."))
    var yes = false

    @Option(help: "Share the values up to this level (default: professional, or level in the configuration file).")
    var level: DisclosureLevel?

    @Option(help: ArgumentHelp("Share only these fields (comma-separated).", valueName: "fields"))
    var fields: FieldListArgument?

    @Option(help: ArgumentHelp("Give up after this long (e.g. 60s, 5m; default: 60s, or timeout in the configuration file).", valueName: "duration"))
    var timeout: DurationArgument?

    @Option(help: ArgumentHelp("Largest clock difference accepted for the peer's card.", valueName: "duration"))
    var maxSkew: DurationArgument = .defaultMaximumSkew

    @Option(help: ArgumentHelp("Compare contacts privately after the cards: ecdh (the default), verified, hash or off.", discussion:
        "Each side learns which contacts both hold, never the others'. The most private mode either side asks for runs (off > verified > ecdh > hash). 'hash' sends salted SHA-256 hashes of DIDs: the peer can test DIDs it knows against them.",
                               valueName: "mode"))
    var friends: FriendsMode?

    @Option(help: ArgumentHelp("Largest set the peer may compare for common friends: its contacts, plus their emails and phones with --match.", valueName: "n"))
    var maxSet: Int = ExchangeService.FriendsOptions.defaultMaximumSetSize

    @Option(help: ArgumentHelp("Also compare contacts' emails and phones (ecdh and verified only).", valueName: "emails,phones"))
    var match: MatchArgument?

    @Option(help: ArgumentHelp("After the cards, send this note to the person (- reads it from standard input).", discussion:
        "Sealed for their card's key, like 'meishi send'; only in an authenticated exchange (a code, or digits a person compared).",
        valueName: "text"))
    var message: String?

    @Option(help: ArgumentHelp("With --message: delete it from their inbox after this long (at most 7d).", valueName: "duration"))
    var ttl: DurationArgument = DurationArgument(seconds: MessageEnvelope.defaultLifetime)

    @Flag(help: "With --message: their inbox deletes it once it has been shown.")
    var once = false

    @OptionGroup var meeting: EventOption

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard (1...MessageEnvelope.maximumLifetime).contains(ttl.seconds) else { throw ValidationError("--ttl must be 1s to 7d") }
        if message == nil, once { throw ValidationError("--once goes with --message") }
        if message == nil, ttl.seconds != MessageEnvelope.defaultLifetime { throw ValidationError("--ttl goes with --message") }
        if message == "-", code == nil, table == nil, !yes {
            throw ValidationError("--message - reads standard input, which comparing the code needs: use --code, or give the text")
        }
        guard (0...65_535).contains(maxSet) else { throw ValidationError("--max-set must be 0 to 65535") }
        if match != nil, friends == .hash || friends == .off {  // with friends from the configuration file: in run
            throw ValidationError("--match needs --friends ecdh or verified: emails and phones hashed alone could be guessed offline")
        }
        guard !(listen && peer != nil) else { throw ValidationError("use --listen on one side and --peer HOST:PORT on the other, not both") }
        if listen || peer != nil, alias != nil || interfaceName != nil {
            throw ValidationError("--alias and --interface are for discovery; they do not go with --listen or --peer")
        }
        if code != nil, table != nil { throw ValidationError("use --table CODE for a table or --code CODE for one person, not both") }
        if let expect {
            guard table != nil else { throw ValidationError("--expect goes with --table") }
            guard (2...Self.largestTable).contains(expect) else { throw ValidationError("--expect must be 2 to \(Self.largestTable) (you included)") }
            if listen || peer != nil, expect != 2 { throw ValidationError("--listen and --peer make a table of two: --expect 2 or none") }
        }
        let option = table != nil ? "--table" : "--code"
        if case .refused(let error)? = code ?? table {
            switch error {
            case .nameplateOutOfRange:
                throw ValidationError("the number before the first '-' of \(option) must be 1 to 999, without a leading zero, as in 7-tulip-anchor")
            case .tooShort(let n):
                throw ValidationError("the words of \(option) have \(n) character\(n == 1 ? "" : "s"); use at least "
                                      + "\(ExchangeCode.minimumPasswordCharacters), as in 7-tulip-anchor (or \(option) alone for a new one)")
            case .tooLong(let n): throw ValidationError("\(option) is \(n) bytes; at most \(ExchangeCode.maximumBytes)")
            case .badShape: throw ValidationError("\(option) must look like 7-tulip-anchor: a number from 1 to 999, '-', then words joined by '-' (or \(option) alone for a new one)")
            }
        }
        if relay != nil, table != nil {
            throw ValidationError("--relay goes with --code: a table (--table) meets on this network only, where everyone at it can be found")
        }
        if let relay {
            guard code != nil else {
                throw ValidationError("--relay needs --code: nothing else authenticates the peer a server hands over (--code alone makes one up)")
            }
            if listen || peer != nil || alias != nil || interfaceName != nil {
                throw ValidationError("--relay meets through the mailbox server: it does not go with --listen, --peer, --alias or --interface")
            }
        }
        if noDirect, relay == nil { throw ValidationError("--no-direct goes with --relay") }
        try RelayChoice.validate(relay: relay, transit: transit)
        if let alias, alias.isEmpty || alias.utf8.count > 32 { throw ValidationError("--alias must be 1 to 32 bytes") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let peer, Self.split(peer) == nil {
            throw ValidationError(Self.badPortMessage(peer)
                                  ?? "--peer must be HOST or HOST:PORT (an IPv6 address with a port in brackets: [fe80::1%eth0]:47823)")
        }
        if let timeout { guard timeout.seconds > 0 else { throw ValidationError("--timeout must be positive") } }
    }

    /// Where the peer is: `--listen`, `--peer`, or discovery (nobody picks among several yet).
    func endpoint(alias: String?) -> ExchangeEndpoint {
        if listen { return .listen(host: nil, port: port) }
        if let peer {
            let (h, p) = Self.split(peer)!
            return .dial(host: h, port: p)
        }
        return .discover(alias: alias, interface: interfaceName, pick: { _ in nil })
    }

    /// HOST, HOST:PORT, a bare IPv6 address, or [IPV6]:PORT; the port defaults to meishi's.
    static func split(_ hostPort: String) -> (String, Int)? {
        let defaultPort = ExchangeTransport.defaultPort
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { return nil }
            let host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let rest = hostPort[hostPort.index(after: close)...]
            if rest.isEmpty { return host.isEmpty ? nil : (host, defaultPort) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port), !host.isEmpty else { return nil }
            return (host, port)
        }
        let colons = hostPort.filter { $0 == ":" }.count
        if colons == 0 { return hostPort.isEmpty ? nil : (hostPort, defaultPort) }
        if colons > 1 { return (hostPort, defaultPort) }  // a bare IPv6 address
        let colon = hostPort.firstIndex(of: ":")!
        guard let port = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(port) else { return nil }
        let host = String(hostPort[..<colon])
        return host.isEmpty ? nil : (host, port)
    }

    /// For a --peer whose port is a number but not a port (`:0`, `:70000`), what to say instead
    /// of the general form.
    static func badPortMessage(_ hostPort: String) -> String? {
        guard let colon = hostPort.lastIndex(of: ":"), hostPort.hasPrefix("[") ? hostPort[..<colon].hasSuffix("]") : true,
              let port = Int(hostPort[hostPort.index(after: colon)...]), !(1...65535).contains(port) else { return nil }
        return MeishiFailure.peerPortOutOfRange(port)
    }

    /// `host:port` as people type it, IPv6 in brackets, the default port left out.
    static func join(_ host: String, _ port: Int) -> String {
        let h = host.contains(":") ? "[\(host)]" : host
        return port == ExchangeTransport.defaultPort ? h : "\(h):\(port)"
    }

    /// The servers of `--relay`: each from its flag, else MEISHI_RELAY / MEISHI_TRANSIT, else the
    /// configuration file, else magic-wormhole's public ones; nil without `--relay`.
    func relayServers(_ ctx: Context, _ settings: Settings) throws(MeishiFailure) -> RelayServers? {
        var servers = try RelayChoice.servers(relay: relay, transit: transit, ctx, settings)
        servers?.direct = !noDirect
        return servers
    }

    /// ` --relay [URL] [--transit ADDRESS]` as the other machine must type it: the servers this
    /// run uses, wherever they came from (a flag, MEISHI_RELAY, the configuration file), named
    /// unless they are magic-wormhole's public ones.
    static func relayArguments(_ servers: RelayServers) -> String {
        " --relay" + ("\(servers.mailbox)" == RelayServers.defaultMailbox ? "" : " \(servers.mailbox)")
            + ("\(servers.transit)" == RelayServers.defaultTransit ? "" : " --transit \(servers.transit)")
    }

    func run(_ ctx: Context) async throws {
        // Flags win over the configuration file, which wins over the defaults.
        let settings = try Settings.load(ctx)
        let level = self.level ?? settings.level ?? .professional, fields = self.fields ?? settings.fields
        let timeout = self.timeout ?? settings.timeout ?? DurationArgument(seconds: 60), friends = self.friends ?? settings.friends ?? .ecdh
        let alias = listen || peer != nil ? nil : alias ?? settings.alias
        if match != nil, friends == .hash || friends == .off {
            throw MeishiFailure("--match needs friends ecdh or verified (the configuration file sets \(friends.rawValue))",
                                hint: "add --friends ecdh", status: .usage)
        }
        let terminal = ctx.terminal
        let exchangeCode = resolveCode()
        if case .given(_, let corrections)? = code ?? table { for c in corrections { ctx.out.note("read '\(c.typed)' as '\(c.word)'") } }
        if table != nil, let exchangeCode {
            return try await runTable(ctx, code: exchangeCode, level: level, fields: fields, timeout: timeout, friends: friends, alias: alias)
        }
        if exchangeCode == nil, !yes, !terminal.isInteractive {
            throw MeishiFailure("comparing the code needs a terminal",
                                hint: "run it on a terminal, use --code on both sides, or pass --yes (contacts are then stored as 'signed')",
                                status: .usage)
        }
        let session = try global.session(ctx)
        let event = try meeting.resolved(ctx)
        let note = try message.map { try ctx.readNote($0, example: "echo hi | meishi exchange --message -") }
        let identity = try session.loadIdentity()
        let card = try session.cards.loadCard()
        let interactive = !yes && !json
        if note != nil, exchangeCode == nil, yes, !json {
            ctx.out.note("the message will not be sent: nobody compares the code (--yes); use --code, or 'meishi send' later")
        }
        let servers = try relayServers(ctx, settings)
        var endpoint = servers.map { ExchangeEndpoint.relay($0) } ?? endpoint(alias: alias)
        session.step(servers.map { "meeting the other side through the mailbox server \($0.mailbox), the session through \($0.transit)" }
                     ?? (listen ? "listening for the other side over TCP" : nil) ?? peer.map { "dialling \($0)" }
                     ?? "discovering the other side by UDP multicast" + (interfaceName.map { " on \($0)" } ?? " on every interface"))
        let yes = self.yes, quiet = json
        let out = ctx.out
        let spinner = Spinner(enabled: !quiet && terminal.standardErrorIsTerminal, sink: ctx.standardError,
                              width: terminal.width)
        let deadline = ctx.now.addingTimeInterval(Double(timeout.seconds))
        let clock = ctx.clock
        /// Seconds left of --timeout, for questions that must not outlive it.
        let remaining: @Sendable () -> Double = { max(0, deadline.timeIntervalSince(clock())) }
        if case .generate? = code, let exchangeCode {
            out.note("your code: \(exchangeCode) (read it out to the other person)")
            if !listen {
                out.note("on the other machine run: meishi exchange --code \(exchangeCode)" + (peer != nil ? " --listen" : "")
                         + (servers.map(Self.relayArguments) ?? ""))
            }
        }
        if case .discover = endpoint {
            endpoint = .discover(alias: alias, interface: interfaceName, pick: { peers in
                guard interactive else { return nil }
                spinner.stop()
                let picked = await BlockingWork.run { terminal.choose(peers, timeout: remaining()) }
                if let picked {
                    spinner.start("pairing with \(picked.announcement.alias.map { TerminalText.sanitized($0) + " at " } ?? "")\(picked.host)…")
                }
                return picked
            })
        }
        let outcome: ExchangeService.Outcome
        do {
            let request = ExchangeService.Request(
                endpoint: endpoint, code: exchangeCode, level: level, only: try fields?.names, timeoutSeconds: timeout.seconds,
                maximumSkew: maxSkew.seconds, confirmedByPerson: !yes,
                friends: .init(mode: friends, maximumSetSize: maxSet, matchEmails: match?.emails ?? false, matchPhones: match?.phones ?? false),
                message: note.map { .init(text: $0, lifetime: ttl.seconds, once: once) }, event: event)
            outcome = try await ExchangeService(home: session.home).run(request, identity: identity, card: card, clock: ctx.unixClock, conversation: .init(
                confirm: { code in
                    spinner.stop()
                    if yes {
                        if !quiet { out.note("code \(code) (not compared by a person: --yes)") }
                        return true
                    }
                    // Ctrl-C here is a "no" the other side hears at once (issue 21), not a lost connection.
                    // A pairing lost meanwhile withdraws the question (the exchange cancels it).
                    let (answer, interrupted, withdrawn) = await PromptInterruption.withdrawable {
                        terminal.answerCode(code, timeout: remaining())
                    }
                    if withdrawn {
                        out.note("question withdrawn: the other side ended the pairing or stopped answering")
                        return false
                    }
                    // Ctrl-C is a "no"; silence until --timeout or the end of input is no answer, and
                    // the other side hears "the other person did not answer", not "the codes differ".
                    if interrupted {
                        out.note("interrupted: answered no")
                        return .differ
                    }
                    if answer == .same { spinner.start("waiting for the other person to confirm…") }
                    return answer
                },
                events: { [verbose = global.verbose, listen] event in
                    let port: Int
                    switch event {
                    case .listening(let p): port = p
                    case .waitingOnMailbox: port = 0
                    default:
                        guard let (line, step) = ExchangeEvents.line(event) else { return }
                        if !step { spinner.interrupt { out.note(line) } } else if verbose { spinner.interrupt { out.debug(line) } }
                        return
                    }
                    if listen, !quiet {
                        let hosts = ExchangeTransport.localAddresses()
                        let example = hosts.first.map { Self.join($0, port) } ?? "THIS-HOST" + (port == ExchangeTransport.defaultPort ? "" : ":\(port)")
                        if !hosts.isEmpty { out.note("this machine: \(hosts.joined(separator: ", "))") }
                        out.note("on the other machine run: meishi exchange --peer \(example)" + (exchangeCode.map { " --code \($0)" } ?? ""))
                    }
                    // Again after a lost pairing: "waiting for the other person to confirm…" is over.
                    spinner.stop()
                    if let servers {
                        return spinner.start("waiting for the other person on the mailbox server \(servers.mailbox) (--timeout \(timeout.seconds)s)")
                    }
                    spinner.start(listen || peer == nil
                                  ? "listening on port \(port), waiting for the other person (--timeout \(timeout.seconds)s)"
                                  : "connecting")
                }))
        } catch .exchange(.unanswered) {
            spinner.stop()
            throw MeishiFailure(ExchangeFailure.unanswered, timeout: timeout.seconds)
        } catch .exchange(.tooManyGuesses(let n)) where listen {
            spinner.stop()
            throw MeishiFailure(listening: .tooManyGuesses(n))
        } catch {
            spinner.stop()
            throw error
        }
        spinner.stop()
        report(outcome, home: session.home, relay: servers, width: terminal.standardOutputIsTerminal ? terminal.width : nil, out)
    }

    /// `width`: standard output's terminal's, to break the first line at spaces (nil: not a terminal).
    func report(_ o: ExchangeService.Outcome, home: Home, relay: RelayServers?, width: Int?, _ out: Console) {
        out.warnConflicts(o.stored)
        let c = o.contact
        if json {
            out.json(.object([
                "result": .string(o.stored.name),
                "code": o.code.map(JSONValue.string) ?? .null, "authentication": .string(o.authentication.rawValue),
                "peer": .string(o.peerAddress), "trust": .string(c.trust.rawValue),
                "store": .string(home.databasePath), "contact": CardRendering.json(c),
                "commonFriends": o.commonFriends.map(Self.json) ?? .null,
                "messages": o.messages.map(MessageWording.json) ?? .null,
                "relay": relay.map { .object(["mailbox": .string("\($0.mailbox)"), "transit": .string("\($0.transit)")]) } ?? .null,
                "path": o.path.map { .string($0.rawValue) } ?? .null,
                "rotatedFrom": o.rotated.map { .string($0.from) } ?? .null,
            ]))
            return
        }
        defer { if let m = o.messages { MessageWording.report(m, peer: CardRendering.who(c), out) } }
        if let relay {
            out.note(o.path == .direct ? "exchanged over \(o.peerAddress) (met through the mailbox server \(relay.mailbox))"
                                       : "exchanged through the transit relay \(relay.transit)")
        }
        // Sentences broken at spaces on a terminal (a path stays whole); the card's block as it is.
        func fitted(_ text: String) -> String {
            guard let width, width >= 20 else { return text }
            return text.split(separator: "\n", omittingEmptySubsequences: false)
                .flatMap { DisplayWidth.wrapped(String($0), to: width, keepingWords: true) }.joined(separator: "\n")
        }
        out.line(fitted("received card from \(CardRendering.name(c.name)) (\(c.trust.rawValue)), saved as #\(c.id ?? 0) in \(home.databasePath)")
                 + "\n" + CardRendering.block(c.fields, rows: [("did", c.did)]))
        if let rotated = o.rotated {
            out.line(fitted(CardRendering.rotated(rotated)))
        } else if let replaced = CardRendering.replacement(c) {
            out.line(fitted(replaced))
        }
        guard let report = o.commonFriends else { return }
        switch report.outcome {
        case .ran(let mode, _, let peerSetSize):
            out.line(FriendsWording.list(report.friends))
            out.note("common friends compared by \(mode.rawValue) (the other side's set: \(peerSetSize) element\(peerSetSize == 1 ? "" : "s"))")
        case .skipped(let why): out.line("Common friends: " + FriendsWording.skipped(why))
        case .failed(let e): out.line("Common friends: " + Console.safe(FriendsWording.failed(e)))
        }
    }

    static func json(_ report: ExchangeService.CommonFriendsReport) -> JSONValue {
        switch report.outcome {
        case .ran(let mode, _, let peerSetSize):
            .object(["status": .string("compared"), "mode": .string(mode.rawValue), "peerSetSize": .number(Double(peerSetSize)),
                     "friends": .array(report.friends.map(FriendsWording.json)),
                     "bytesSent": .number(Double(report.cost.bytesSent)), "bytesReceived": .number(Double(report.cost.bytesReceived)),
                     "seconds": .number((report.cost.seconds * 1000).rounded() / 1000)])
        case .skipped(let why): .object(["status": .string("skipped"), "reason": .string(FriendsWording.skipped(why))])
        case .failed(let e): .object(["status": .string("failed"), "reason": .string(FriendsWording.failed(e))])
        }
    }
}

/// The words of the message phase of `meishi exchange` (`--message`).
enum MessageWording {
    static func report(_ m: ExchangeMessageOutcome, peer: String, _ out: Console) {
        if m.withheld {
            out.line("Message not sent: nobody compared the code here (--yes); send it later with 'meishi send'")
        }
        switch m.sent {
        case .stored?: out.line("Message delivered to \(peer)")
        case .duplicate?: out.line("Message delivered to \(peer) (they had it already)")
        case .refused(let reason)?: out.line("Message not delivered: \(NoteWording.describe(reason))")
        case nil: break
        }
        switch m.received {
        case .stored?, .duplicate?: out.line("Message from \(peer): read it with 'meishi inbox'")
        case .refused(let reason)?: out.line("A message from \(peer) was refused: \(NoteWording.describe(reason))")
        case nil: break
        }
        if let failure = m.failure { out.line("Messages: \(Console.safe(describe(failure))); the card exchange itself completed") }
    }

    static func describe(_ f: ExchangeMessageFailure) -> String {
        switch f {
        case .notSealed(let why): "our message could not be sealed (\(ExchangeWording.describe(why)))"
        case .protocolViolation(let e): ExchangeWording.describe(e)
        case .connectionLost(let loss): ExchangeWording.describe(.connectionLost(loss))
        }
    }

    static func json(_ m: ExchangeMessageOutcome) -> JSONValue {
        func verdict(_ v: MessageVerdict?) -> JSONValue {
            switch v {
            case .stored?: .string("stored")
            case .duplicate?: .string("duplicate")
            case .refused?: .string("refused")
            case nil: .null
            }
        }
        func reason(_ v: MessageVerdict?) -> JSONValue {
            if case .refused(let r)? = v { return .string(NoteWording.describe(r)) }
            return .null
        }
        return .object([
            "sent": m.withheld ? .string("withheld") : verdict(m.sent),
            "sentReason": m.withheld ? .string("nobody compared the code here (--yes)") : reason(m.sent),
            "id": m.sentEnvelope.map { .string(Base64URL.encode($0.id)) } ?? .null,
            "received": verdict(m.received), "receivedReason": reason(m.received),
            "failure": m.failure.map { .string(describe($0)) } ?? .null,
        ])
    }
}
