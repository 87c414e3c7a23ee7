import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity

struct Send: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a short note to a contact running 'meishi listen' nearby.",
        discussion: """
            The note (at most 4 KiB) is sealed with crypto_box between your card's X25519 key and the \
            contact's, and sent only after a Noise KK handshake with both static keys and fresh ephemeral \
            keys: only that contact can read it, and nothing is signed, so they cannot prove to anyone else \
            that you wrote it. 'send' finds the contact's listener with a multicast probe that only that \
            listener recognises (or connects to --peer), waits for the acknowledgement and prints \
            'delivered'. Nobody answered within --timeout: exit 75, not delivered, nothing half-sent. \
            Write - as TEXT to read it from standard input (it then stays out of ps and shell history).

            With --relay the contact may be on another network: both meet on a magic-wormhole mailbox \
            server in a mailbox named by your pair's key for the day (only the two of you can find it; \
            'meishi listen --relay' must be running there, with the same servers) and the same Noise KK \
            delivery runs through its transit relay. The servers see who connects and when, and sizes; \
            never the note, a name or a DID.

            Examples:
              meishi send Ken "great talk - slides at https://example.org/s"
              echo "the door code is 4711" | meishi send Ken - --ttl 1h --once
              meishi send Ken "landed, call me" --relay
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The contact: an id, a name or a DID (prefix).", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Argument(help: ArgumentHelp("The note, or - to read it from standard input.", valueName: "text"))
    var text: String

    @Option(help: ArgumentHelp("Delete it from the recipient's inbox after this long (at most 7d).", valueName: "duration"))
    var ttl: DurationArgument = DurationArgument(seconds: MessageEnvelope.defaultLifetime)

    @Option(help: ArgumentHelp("Give up after this long (e.g. 10s, 2m).", valueName: "duration"))
    var timeout: DurationArgument = DurationArgument(seconds: 30)

    @Flag(help: "The recipient's inbox deletes it once it has been shown.")
    var once = false

    @Option(help: ArgumentHelp("Connect to this listener instead of probing (the port defaults to 47825).", valueName: "host[:port]"))
    var peer: String?

    @Option(help: ArgumentHelp("Deliver through a magic-wormhole mailbox server and transit relay (alone: the configured or the public one).",
                               discussion: "For a contact on another network. Needs the internet (or your own servers).", valueName: "url"))
    var relay: String?

    @Option(help: ArgumentHelp("With --relay: the transit relay to carry the note (default: the configured or the public one).",
                               valueName: "tcp:host:port"))
    var transit: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        guard (1...MessageEnvelope.maximumLifetime).contains(ttl.seconds) else { throw ValidationError("--ttl must be 1s to 7d") }
        guard timeout.seconds > 0 else { throw ValidationError("--timeout must be positive") }
        if let peer, MessagePort.split(peer) == nil {
            throw ValidationError(Exchange.badPortMessage(peer) ?? "--peer must be HOST or HOST:PORT (an IPv6 address with a port in brackets)")
        }
        if relay != nil, peer != nil { throw ValidationError("--relay meets through the mailbox server: it does not go with --peer") }
        try RelayChoice.validate(relay: relay, transit: transit)
    }

    func run(_ ctx: Context) async throws {
        try MessagePort.refuseLinkLocalWithoutInterface(peer)
        let session = try global.session(ctx)
        let servers = try RelayChoice.servers(relay: relay, transit: transit, ctx, try Settings.load(ctx))
        let service = MessageService(home: session.home, clock: ctx.unixClock)
        // The contact is checked before the note is read or the passphrase asked.
        let contact = try service.recipient(ref, me: try? session.identities.loadPublic())
        let note = try ctx.readNote(text, example: "echo hi | meishi send Ken -")
        let identity = try session.loadIdentity()
        let out = ctx.out
        let peerEndpoint = peer.flatMap(MessagePort.split)
        let spinner = Spinner(enabled: !json && ctx.terminal.standardErrorIsTerminal, sink: ctx.standardError, width: ctx.terminal.width)
        spinner.start(peerEndpoint.map { "connecting to \($0.0.contains(":") ? "[\($0.0)]" : $0.0):\($0.1)…" }
                      ?? servers.map { "calling \(CardRendering.name(contact.name)) through \($0.mailbox) (up to \(timeout.seconds) s)…" }
                      ?? "looking for \(CardRendering.name(contact.name)) nearby (up to \(timeout.seconds) s)…")
        let result: Result<MessageService.SendOutcome, MeishiError>
        do {
            result = .success(try await service.send(
                text: note, to: contact, identity: identity, lifetime: ttl.seconds, once: once,
                peer: peerEndpoint.map { (host: $0.0, port: $0.1) }, relay: servers, timeoutSeconds: Double(timeout.seconds),
                steps: { [global] step in if global.verbose { spinner.interrupt { out.note(NoteEvents.describe(step)) } } }))
        } catch {
            result = .failure(error)
        }
        spinner.stop()
        if case .failure(.delivery(.notDelivered(let why))) = result {
            if peerEndpoint != nil { throw MeishiFailure.notDeliveredToPeer(why) }
            if servers != nil { throw MeishiFailure.notDeliveredThroughRelay(why) }
        }
        let outcome = try result.get()
        let c = outcome.contact
        if json {
            out.json(.object([
                "result": .string("delivered"), "id": .string(Hex.encode(outcome.envelope.id)),
                "to": .string(c.did), "name": c.name.map(JSONValue.string) ?? .null, "peer": .string(NoteWording.describe(outcome.peerAddress)),
                "relay": RelayChoice.json(servers),
                "expires": .string(CardRendering.date(outcome.envelope.expires)), "once": .bool(outcome.envelope.once),
                "alreadyDelivered": .bool(outcome.alreadyDelivered),
            ]))
            return
        }
        out.line("delivered to \(CardRendering.name(c.name)) \(servers == nil ? "at" : "through") \(NoteWording.describe(outcome.peerAddress))"
                 + (outcome.alreadyDelivered ? " (they had it already)" : "")
                 + "; it expires \(CardRendering.date(outcome.envelope.expires))")
    }
}

/// The TCP port of `meishi listen`, and `--peer` of `send` read with it as the default port.
enum MessagePort {
    static let `default` = MessageTransport.defaultPort

    /// HOST, HOST:PORT, a bare IPv6 address or [IPV6]:PORT (as `exchange --peer`), the port defaulting to listen's.
    static func split(_ text: String) -> (String, Int)? {
        guard let (host, port) = Exchange.split(text) else { return nil }
        let explicit = text.hasPrefix("[") ? text.hasSuffix("]:\(port)") : text.filter { $0 == ":" }.count == 1
        return (host, explicit ? port : Self.default)
    }

    /// A link-local IPv6 `--peer` without its interface cannot be reached (the system cannot tell
    /// which link): said before anything is read or asked, not as a socket error after the timeout.
    static func refuseLinkLocalWithoutInterface(_ peer: String?) throws {
        if let host = peer.flatMap(split)?.0, MessageTransport.isLinkLocalWithoutInterface(host) { throw MeishiFailure.linkLocalPeer(host) }
    }
}
