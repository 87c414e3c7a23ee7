import ArgumentParser
import MeishiCard
import MeishiProximity
import MeishiText

/// `--relay [URL]` and `--transit tcp:HOST:PORT` of `exchange`, `send`, `listen` and `card push`:
/// checked the same way, and resolved the same way (the flag, else MEISHI_RELAY / MEISHI_TRANSIT,
/// else the configuration file, else magic-wormhole's public servers).
enum RelayChoice {
    /// The options' shape, for `validate()` (an empty `relay` is a bare `--relay`).
    static func validate(relay: String?, transit: String?) throws {
        if let relay, !relay.isEmpty, MailboxURL(relay) == nil {
            throw ValidationError("--relay " + notAMailboxURL(relay))
        }
        if let transit {
            guard relay != nil else { throw ValidationError("--transit goes with --relay") }
            if TransitAddress(transit) == nil {
                throw ValidationError("--transit must be tcp:HOST:PORT, as in \(RelayServers.defaultTransit)")
            }
        }
    }

    /// Why `text` is not a mailbox server's URL, after the option or variable that gave it: a
    /// wss:// or http(s):// URL is named as such (meishi speaks plain ws:// only, as magic-wormhole's
    /// own defaults do), so a person who copied one knows what to change.
    static func notAMailboxURL(_ text: String) -> String {
        let example = "as in \(RelayServers.defaultMailbox)"
        let scheme = text.prefix { $0 != ":" }.lowercased()
        switch scheme {
        case "wss": return "must be a ws:// URL: meishi does not speak TLS (wss://) to a mailbox server; \(example)"
        case "http", "https": return "must be the mailbox server's WebSocket URL, ws://HOST[:PORT]/PATH, not a web address (\(scheme)://); \(example)"
        default: return "must be a mailbox server's URL, ws://HOST[:PORT]/PATH, \(example)"
        }
    }

    /// The servers to use; nil without `--relay`.
    static func servers(relay: String?, transit: String?, _ ctx: Context, _ settings: Settings) throws(MeishiFailure) -> RelayServers? {
        guard let relay else { return nil }
        func fromEnvironment<T>(_ name: String, _ parse: (String) -> T?, _ what: String, _ example: String) throws(MeishiFailure) -> T? {
            guard let text = ctx.environment[name], !text.isEmpty else { return nil }
            guard let value = parse(text) else {
                throw MeishiFailure("\(name) is not \(what): '\(TerminalText.sanitized(text))'", hint: "as in \(name)=\(example)", status: .usage)
            }
            return value
        }
        var mailbox: MailboxURL? = MailboxURL(relay)
        if relay.isEmpty {
            mailbox = try fromEnvironment("MEISHI_RELAY", { MailboxURL($0) }, "a mailbox server's ws:// URL", RelayServers.defaultMailbox) ?? settings.relay
        }
        var address: TransitAddress? = transit.flatMap { TransitAddress($0) }
        if address == nil {
            address = try fromEnvironment("MEISHI_TRANSIT", { TransitAddress($0) }, "a transit relay's tcp:HOST:PORT", RelayServers.defaultTransit)
                ?? settings.transit
        }
        return RelayServers(mailbox: mailbox ?? MailboxURL(RelayServers.defaultMailbox)!, transit: address ?? TransitAddress(RelayServers.defaultTransit)!)
    }

    /// The servers as `--json` gives them.
    static func json(_ servers: RelayServers?) -> JSONValue {
        servers.map { .object(["mailbox": .string("\($0.mailbox)"), "transit": .string("\($0.transit)")]) } ?? .null
    }

    /// A bare `--relay` (last, or not followed by a URL) of the commands other than
    /// `exchange` (whose own rule is `Exchange.expandingBareCode`) gets an empty value, which the
    /// argument parser needs: `meishi send --relay ken hi` sends to ken through the default servers.
    static func expandingBareRelay(_ arguments: [String]) -> [String] {
        guard !arguments.contains("exchange"), arguments.contains("--relay") else { return arguments }
        var out: [String] = []
        for (n, a) in arguments.enumerated() {
            out.append(a)
            if a == "--relay", n + 1 == arguments.count || !arguments[n + 1].contains("://") { out.append("") }
        }
        return out
    }
}
