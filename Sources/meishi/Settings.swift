import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore

/// Defaults a person sets once in `$XDG_CONFIG_HOME/meishi/config` (`~/.config/meishi/config`)
/// instead of typing the same flags every time; a flag on the command line wins. The file is a
/// subset of TOML (`ConfigFile`); every key takes what its flag takes, checked the same way, and
/// an unknown key or a bad value is an error naming the file and the line (exit 78).
struct Settings: Sendable {
    /// `level`: --level of exchange, card qr and card export.
    var level: DisclosureLevel?
    /// `fields`: --fields of the same commands.
    var fields: FieldListArgument?
    /// `alias`: --alias of exchange (discovery only).
    var alias: String?
    /// `timeout`: --timeout of exchange.
    var timeout: DurationArgument?
    /// `friends`: --friends of exchange.
    var friends: FriendsMode?
    /// `remember`: --remember of every command that unlocks the key.
    var remember: DurationArgument?
    /// `event`: --event of exchange, scan and contacts add.
    var event: String?
    /// `relay`: the mailbox server of a bare `--relay` (exchange, send, listen, card push).
    var relay: MailboxURL?
    /// `transit`: --transit of the same commands.
    var transit: TransitAddress?

    /// The keys, as the man page lists them.
    static let keys = ["alias", "event", "fields", "friends", "level", "relay", "remember", "timeout", "transit"]

    /// The file's path for an environment: $XDG_CONFIG_HOME/meishi/config when XDG_CONFIG_HOME is
    /// absolute (the XDG base directory rule), else ~/.config/meishi/config; nil without a home.
    static func path(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/meishi/config" }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.config/meishi/config"
    }

    /// The settings of the context's configuration file; none when it does not exist.
    static func load(_ ctx: Context) throws(MeishiFailure) -> Settings {
        guard let path = path(environment: ctx.environment) else { return Settings() }
        let bytes: [UInt8]
        do {
            bytes = try SecureFile.read(path, limit: 64 * 1024)
        } catch {
            if case .cannotRead(_, _, missing: true) = error { return Settings() }
            var failure = MeishiFailure(error)
            failure.status = .configuration
            throw failure
        }
        guard bytes.count <= 64 * 1024 else {
            throw MeishiFailure("\(path): larger than 64 KiB, not a meishi configuration file", status: .configuration)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw MeishiFailure("\(path): not UTF-8 text", hint: "save it as UTF-8 (TOML files are)", status: .configuration)
        }
        return try Settings(text, path: path)
    }

    init() {}

    /// Reads a file's text; `path` only names it in errors.
    init(_ text: String, path: String) throws(MeishiFailure) {
        let file: ConfigFile
        do {
            file = try ConfigFile(parsing: text)
        } catch {
            throw Self.failure(path, error.line, error.reason, hint: "one 'key = value' a line, text in double quotes; see CONFIGURATION in meishi(1)")
        }
        for entry in file.entries {
            // The key first: a misspelt key with a bad value is reported as misspelt, not as a
            // value to quote (the hint then led to "unknown key").
            guard Self.keys.contains(entry.key) else {
                let close = Self.keys.filter { Meishi.editDistance($0, entry.key) <= 2 }
                throw Self.failure(path, entry.line, "unknown key '\(entry.key)'",
                                   hint: close.first.map { "did you mean '\($0)'?" } ?? "the keys are " + Self.keys.joined(separator: ", "))
            }
            let text: String
            switch entry.value {
            case .string(let s): text = s
            case .integer(let n) where entry.key == "timeout" || entry.key == "remember": text = String(n)
            case .strings(let items) where entry.key == "fields": text = items.joined(separator: ",")
            default:
                throw Self.failure(path, entry.line, "'\(entry.key)' takes text in double quotes", hint: "as in \(entry.key) = \"\(Self.example(entry.key))\"")
            }
            func bad(_ what: String) -> MeishiFailure {
                Self.failure(path, entry.line, "'\(entry.key)' \(what), not '\(text)'", hint: "as in \(entry.key) = \"\(Self.example(entry.key))\"")
            }
            switch entry.key {
            case "level":
                guard let v = DisclosureLevel(argument: text) else { throw bad("must be public, professional or personal") }
                level = v
            case "fields":
                guard let v = FieldListArgument(argument: text) else { throw bad("must name fields, comma-separated") }
                do { _ = try v.names } catch { throw bad("names a field meishi does not know") }
                fields = v
            case "alias":
                guard !text.isEmpty, text.utf8.count <= 32 else { throw bad("must be 1 to 32 bytes") }
                alias = text
            case "timeout":
                guard let v = DurationArgument(argument: text), v.seconds > 0 else { throw bad("must be a positive duration (60, 90s, 5m)") }
                timeout = v
            case "remember":
                guard let v = DurationArgument(argument: text), (0...Agent.maximumSeconds).contains(v.seconds) else {
                    throw bad("must be a duration from 0 (off) to 12h")
                }
                remember = v
            case "friends":
                guard let v = FriendsMode(argument: text) else { throw bad("must be ecdh, verified, hash or off") }
                friends = v
            case "event":
                guard Meeting.isValidEvent(text) else { throw bad("must be 1 to \(Meeting.maximumEventBytes) bytes of text on one line") }
                event = text
            case "relay":
                guard let v = MailboxURL(text) else { throw bad("must be a mailbox server's ws://HOST[:PORT]/PATH URL") }
                relay = v
            case "transit":
                guard let v = TransitAddress(text) else { throw bad("must be a transit relay's tcp:HOST:PORT") }
                transit = v
            default:
                preconditionFailure("key '\(entry.key)' is listed in Settings.keys but not read")
            }
        }
    }

    private static func example(_ key: String) -> String {
        ["level": "public", "fields": "name,email", "alias": "Mei", "timeout": "2m", "friends": "ecdh", "remember": "15m", "event": "PyCon JP 2026",
         "relay": "ws://relay.magic-wormhole.io:4000/v1", "transit": "tcp:transit.magic-wormhole.io:4001"][key] ?? "…"
    }

    private static func failure(_ path: String, _ line: Int, _ message: String, hint: String) -> MeishiFailure {
        MeishiFailure("\(path) line \(line): \(message)", hint: hint, status: .configuration)
    }
}
