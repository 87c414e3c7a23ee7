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
            throw ValidationError("--relay must be a mailbox server's URL, ws://HOST[:PORT]/PATH, as in \(RelayServers.defaultMailbox)")
        }
        if let transit {
            guard relay != nil else { throw ValidationError("--transit goes with --relay") }
            if TransitAddress(transit) == nil {
                throw ValidationError("--transit must be tcp:HOST:PORT, as in \(RelayServers.defaultTransit)")
            }
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
