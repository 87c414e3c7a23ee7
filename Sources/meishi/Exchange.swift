import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity

struct Exchange: MeishiCommand {
    static let configuration = CommandConfiguration(
        abstract: "Swap signed cards with a nearby person over the network.",
        discussion: """
            Run 'meishi exchange' on both machines: they find each other by UDP multicast on the local \
            network (group 239.255.77.23, port 47824, TTL 1), announcing only a random session id and a \
            port. With several people around, agree on a word and use --code on both sides. Where \
            multicast is blocked, one side runs 'meishi exchange --listen', the other \
            'meishi exchange --peer HOST:PORT'. Both screens then show a 6-digit code; each person checks that the other screen shows the \
            same code and answers y. Only then are the signed cards sent, verified (signature, DID, \
            binding to this session, signed within --max-skew) and, once both sides have acknowledged, \
            stored with trust 'met'. A mismatch or a 'no' stores nothing on either side.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Wait for the other person to connect.")
    var listen = false

    @Option(help: "Port for --listen (0: any free port).")
    var port: Int = ExchangeTransport.defaultPort

    @Option(help: ArgumentHelp("Connect to a listening peer.", valueName: "host:port"))
    var peer: String?

    @Option(help: ArgumentHelp("Pair only with a peer using the same code (it never crosses the network).", valueName: "code"))
    var code: String?

    @Option(help: ArgumentHelp("A name to show other peers when several are around (off by default).", valueName: "alias"))
    var alias: String?

    @Option(name: .customLong("interface"), help: ArgumentHelp("Announce and listen only on this network interface.", valueName: "name"))
    var interfaceName: String?

    @Flag(help: ArgumentHelp("Do not ask to compare the code.", discussion:
        "For scripts and tests. Without a person comparing codes, nothing stops a machine in the middle from swapping cards: contacts are stored as 'signed', not 'met'."))
    var yes = false

    @Option(help: "Share the values up to this level.")
    var level: DisclosureLevel = .professional

    @Option(help: ArgumentHelp("Share only these fields (comma-separated).", valueName: "fields"))
    var fields: FieldListArgument?

    @Option(help: ArgumentHelp("Give up after this long (e.g. 60s, 5m).", valueName: "duration"))
    var timeout: DurationArgument = DurationArgument(argument: "60")!

    @Option(help: ArgumentHelp("Largest clock difference accepted for the peer's card.", valueName: "duration"))
    var maxSkew: DurationArgument = .defaultMaximumSkew

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard !(listen && peer != nil) else { throw ValidationError("use --listen on one side and --peer HOST:PORT on the other, not both") }
        if listen || peer != nil, code != nil || alias != nil || interfaceName != nil {
            throw ValidationError("--code, --alias and --interface are for discovery; they do not go with --listen or --peer")
        }
        if let code, code.isEmpty || code.utf8.count > 64 { throw ValidationError("--code must be 1 to 64 bytes") }
        if let alias, alias.isEmpty || alias.utf8.count > 32 { throw ValidationError("--alias must be 1 to 32 bytes") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let peer, Self.split(peer) == nil { throw ValidationError("--peer must be HOST:PORT") }
        guard timeout.seconds > 0 else { throw ValidationError("--timeout must be positive") }
    }

    static func split(_ hostPort: String) -> (String, Int)? {
        guard let colon = hostPort.lastIndex(of: ":"), let port = Int(hostPort[hostPort.index(after: colon)...]),
              (1...65535).contains(port) else { return nil }
        var host = String(hostPort[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    func run(_ ctx: Context) async throws {
        let terminal = ctx.terminal
        if !yes, !terminal.isInteractive {
            throw MeishiFailure("comparing the code needs a terminal", hint: "run it on a terminal, or pass --yes (contacts are then stored as 'signed')",
                                status: .usage)
        }
        let session = try global.session(ctx)
        let identity = try session.loadIdentity()
        let card = try session.cards.loadCard()
        let interactive = !yes && !json
        let endpoint: ExchangeEndpoint
        if listen {
            endpoint = .listen(host: nil, port: port)
        } else if let peer {
            let (h, p) = Self.split(peer)!
            endpoint = .dial(host: h, port: p)
        } else {
            endpoint = .discover(code: code, alias: alias, interface: interfaceName, pick: { peers in
                guard interactive else { return nil }
                return terminal.choose(peers)
            })
        }
        let yes = self.yes, quiet = json
        let out = ctx.out
        let spinner = Spinner(enabled: !quiet && terminal.standardErrorIsTerminal, sink: ctx.standardError)
        let outcome = try await ExchangeService(home: session.home).run(
            endpoint: endpoint, identity: identity, card: card, level: level, only: fields?.names,
            timeoutSeconds: timeout.seconds, maximumSkew: maxSkew.seconds, confirmedByPerson: !yes, clock: ctx.unixClock,
            confirm: { code in
                spinner.stop()
                if yes {
                    if !quiet { out.note("code \(code) (not compared by a person: --yes)") }
                    return true
                }
                return terminal.confirm("Check that the other screen shows \(code) — same? [y/N] ")
            },
            log: { out.note($0) },
            listening: { [listen] port in
                spinner.start(listen || peer == nil
                              ? "listening on port \(port), waiting for the other person (--timeout \(timeout.seconds)s)"
                              : "connecting")
            })
        spinner.stop()
        report(outcome, home: session.home, out)
    }

    func report(_ o: ExchangeService.Outcome, home: Home, _ out: Console) {
        out.warnConflicts(o.stored)
        let c = o.contact
        if json {
            out.json(.object([
                "result": .string(o.stored.name),
                "code": .string(o.code), "peer": .string(o.peerAddress), "trust": .string(c.trust.rawValue),
                "store": .string(home.databasePath), "contact": CardRendering.json(c),
            ]))
            return
        }
        out.line("received card from \(CardRendering.name(c.name)) (\(c.trust.rawValue)), saved as #\(c.id ?? 0) in \(home.databasePath)\n"
                 + CardRendering.block(c.fields, rows: [("did", c.did)]))
    }
}
