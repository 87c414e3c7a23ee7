import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore

struct CardPushCommand: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Give your updated card to the contacts who have your old one, if they run 'meishi listen'.",
        discussion: """
            Signs your current card and delivers it over the notes channel (a probe only that contact's \
            listener recognises, then a Noise KK handshake with both card keys, as 'send' does) to each \
            contact named, or by default to every signed or met contact that received your card at an \
            exchange or an earlier push. Each gets the level it last received unless --level says \
            otherwise (never received: --level, else 'level' in the configuration file, else \
            professional). The listener stores it only when it is newer than the card it holds and \
            verifies as yours; your notes, tags and meetings are never part of it. Reports delivered, \
            refused or not reachable for each contact; exit 75 when none was delivered. With --relay, \
            through a magic-wormhole mailbox server and transit relay to contacts running 'meishi listen \
            --relay' on other networks, as 'send --relay' does.

            Examples:
              meishi card push
              meishi card push ken --level public
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contacts to push to (default: every contact holding a card of yours).", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var refs: [String] = []

    @Option(help: "Push at this level to every contact (default: the level each last received).")
    var level: DisclosureLevel?

    @Option(help: ArgumentHelp("Give up on a contact after this long (e.g. 10s, 2m).", valueName: "duration"))
    var timeout: DurationArgument = DurationArgument(seconds: 15)

    @Option(help: ArgumentHelp("With one REF: connect to this listener instead of probing (the port defaults to 47825).",
                               valueName: "host[:port]"))
    var peer: String?

    @Option(help: ArgumentHelp("Deliver through a magic-wormhole mailbox server and transit relay (alone: the configured or the public one).",
                               valueName: "url"))
    var relay: String?

    @Option(help: ArgumentHelp("With --relay: the transit relay (default: the configured or the public one).", valueName: "tcp:host:port"))
    var transit: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard timeout.seconds > 0 else { throw ValidationError("--timeout must be positive") }
        if relay != nil, peer != nil { throw ValidationError("--relay meets through the mailbox server: it does not go with --peer") }
        try RelayChoice.validate(relay: relay, transit: transit)
        if let peer {
            guard refs.count == 1 else { throw ValidationError("--peer goes with one REF") }
            guard MessagePort.split(peer) != nil else {
                throw ValidationError(Exchange.badPortMessage(peer) ?? "--peer must be HOST or HOST:PORT (an IPv6 address with a port in brackets)")
            }
        }
    }

    func run(_ ctx: Context) async throws {
        try MessagePort.refuseLinkLocalWithoutInterface(peer)
        let session = try global.session(ctx)
        let store = try session.contacts.open()
        let settings = try Settings.load(ctx)
        let fallback = settings.level ?? .professional
        let servers = try RelayChoice.servers(relay: relay, transit: transit, ctx, settings)
        let targets = try CardPushService.targets(refs, level: level, fallback: fallback, store: store)
        guard !targets.isEmpty else { throw MeishiFailure.nobodyToPushTo }
        let card = try session.cards.loadCard()
        let (identity, passphrase) = try session.identities.loadRemembering(passphrases: ctx.passphrases)
        // After `id rotate`: the statements go with the card to contacts not given one since.
        let statements = try session.identities.myRotations()
        let rotation = statements.isEmpty ? nil : CardPushService.Rotation(
            statements: statements,
            previous: try session.identities.previousBoxKey(passphrases: GivenPassphrases(value: passphrase), now: ctx.unixNow))
        let out = ctx.out
        let spinner = Spinner(enabled: !json && ctx.terminal.standardErrorIsTerminal, sink: ctx.standardError, width: ctx.terminal.width)
        spinner.start("pushing your card to \(targets.count) contact\(targets.count == 1 ? "" : "s") (up to \(timeout.seconds) s)…")
        let results = try await CardPushService.push(
            card, to: targets, identity: identity, store: store, peer: peer.flatMap(MessagePort.split).map { (host: $0.0, port: $0.1) },
            relay: servers, rotation: rotation, timeoutSeconds: Double(timeout.seconds), clock: ctx.unixClock,
            steps: { [global] step in if global.verbose { spinner.interrupt { out.note(NoteEvents.describe(step)) } } })
        spinner.stop()
        if json {
            out.json(.object(["results": .array(results.map(Self.json))]))
        } else {
            for r in results { out.line(Self.line(r)) }
        }
        if !results.contains(where: { if case .delivered = $0.outcome { true } else { false } }) {
            throw ExitCode(ExitStatus.timedOut.rawValue)
        }
    }

    static func by(_ address: NoteAddress) -> String {
        if case .transitRelay = address { "through" } else { "at" }
    }

    static func who(_ t: CardPushService.Target) -> String { "\(CardRendering.name(t.contact.name)) (#\(t.contact.id ?? 0))" }

    /// A contact's result: "through" the transit relay (`--relay`), as `send` says, "at" a listener.
    static func line(_ r: CardPushService.Result) -> String {
        switch r.outcome {
        case .delivered(let address):
            "delivered to \(who(r.target)) \(by(address)) \(NoteWording.describe(address)) (\(r.target.level.rawValue))"
        case .refused(let reason, let address):
            "refused by \(who(r.target)) \(by(address)) \(NoteWording.describe(address)): \(NoteWording.describe(reason))"
        case .notReachable(let why): "not reachable: \(who(r.target)): \(Console.safe(NoteWording.describe(why)))"
        case .unusableKey(let error): "not reachable: \(who(r.target)): \(Console.safe("\(error)"))"
        }
    }

    static func json(_ r: CardPushService.Result) -> JSONValue {
        var obj: [String: JSONValue] = ["id": .number(Double(r.target.contact.id ?? 0)), "did": .string(r.target.contact.did),
                                        "name": r.target.contact.name.map(JSONValue.string) ?? .null, "level": .string(r.target.level.rawValue)]
        switch r.outcome {
        case .delivered(let address):
            obj["result"] = .string("delivered")
            obj["peer"] = .string(NoteWording.describe(address))
        case .refused(let reason, let address):
            obj["result"] = .string("refused")
            obj["reason"] = .string(NoteWording.describe(reason))
            obj["peer"] = .string(NoteWording.describe(address))
        case .notReachable(let why):
            obj["result"] = .string("not reachable")
            obj["reason"] = .string(NoteWording.describe(why))
        case .unusableKey(let error):
            obj["result"] = .string("not reachable")
            obj["reason"] = .string("\(error)")
        }
        return .object(obj)
    }
}

struct ContactsChanges: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "changes", abstract: "List the newer cards your contacts sent, and what changed.",
        discussion: """
            Every card that replaced an earlier one of the same contact and changed something, newest \
            first: when it came, how (exchange, push, qr, file), the name it carried (old → new: "Eve \
            (#2, push) now calls themselves Mei Tanaka") and what changed from the card before it. With REF, that \
            contact only; --since keeps those received in the last DURATION (e.g. 7d).

            Examples:
              meishi contacts changes
              meishi contacts changes ken --since 30d --json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String?

    @Option(help: ArgumentHelp("Only changes received in the last DURATION (e.g. 12h, 7d).", valueName: "duration"))
    var since: DurationArgument?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let contacts = try global.session(ctx).contacts
        let store = try contacts.open(readOnly: true)
        let found: [ReceivedChange]
        do {
            let id = try ref.map { r throws(StoreError) in try store.resolve(r).id! }
            found = try store.receivedChanges(of: id, since: since.map { ctx.unixNow - $0.seconds } ?? 0)
        } catch { throw MeishiError.store(error) }
        if json {
            return ctx.out.json(.object(["changes": .array(found.map { c in
                .object(["id": .number(Double(c.contact.id ?? 0)), "did": .string(c.contact.did),
                         "name": c.name.map(JSONValue.string) ?? .null,
                         "previousName": c.previousName.map(JSONValue.string) ?? .null, "received": .string(CardRendering.date(c.card.received)),
                         "cardTimestamp": .string(CardRendering.date(c.card.cardTimestamp)), "source": .string(c.card.source.rawValue),
                         "changes": .array(c.changes.map { .string(CardRendering.change($0)) })])
            })]))
        }
        guard !found.isEmpty else { return ctx.out.note("no updated cards received" + (since != nil ? " in that time" : "")) }
        for c in found {
            ctx.out.line("\(CardRendering.date(c.card.received).replacingOccurrences(of: "T", with: " ").prefix(16)) "
                         + CardRendering.updated(name: c.name, previousName: c.previousName, id: c.contact.id ?? 0,
                                                 how: c.card.source.rawValue, changes: c.changes))
        }
    }
}
