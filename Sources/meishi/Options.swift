import ArgumentParser
import Foundation
import Logging
import MeishiCard
import MeishiKit
import MeishiProximity
import MeishiStore

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Use DIR as the meishi home.", discussion:
        "Overrides MEISHI_HOME and XDG_DATA_HOME; the default is ~/.local/share/meishi.", valueName: "dir"), completion: .directory)
    var home: String?

    @Flag(name: .shortAndLong, help: "Print diagnostics on standard error.")
    var verbose = false

    @Option(help: ArgumentHelp("Keep the unlocked key in the session keyring this long (e.g. 15m; at most 12h; 0: off, the default).", discussion:
        "What is kept is the key Argon2id derived from the passphrase, never the passphrase; later commands of this session use it without asking, until it expires or 'meishi lock'. Also 'remember' in the configuration file.",
        valueName: "duration"))
    var remember: DurationArgument?

    func validate() throws {
        if let remember, !(0...Agent.maximumSeconds).contains(remember.seconds) { throw ValidationError("--remember must be 0 to 12h") }
        // `--home "$DIR"` with DIR unset would otherwise mean the person's own home.
        if let home, home.allSatisfy(\.isWhitespace) { throw ValidationError("--home cannot be empty: name a directory, or leave --home out for the default home") }
    }

    /// The command's home, resolved from --home and the context's environment; starts logging.
    /// Every command that reads or writes the home needs an identity there: a home without one
    /// (a mistyped --home) is refused before anything is created in it. `init`, `verify` and
    /// `scan --raw` pass `needsIdentity: false`.
    func session(_ ctx: Context, needsIdentity: Bool = true) throws -> HomeSession {
        let level = verbose ? .debug : (ctx.environment["MEISHI_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning)
        LoggingSystem.bootstrapOnce(level: level, sink: ctx.standardError)
        let home = try Home.resolve(flag: home, environment: ctx.environment, workingDirectory: ctx.workingDirectory)
        try home.checkOwnership()
        if verbose { ctx.out.debug("home \(home.path) (\(homeSource(ctx.environment)))") }
        // --remember, else the configuration file's remember (checked there), else off.
        let keep = try remember?.seconds ?? Settings.load(ctx).remember?.seconds ?? 0
        ctx.agent.remember(for: keep, console: ctx.out)
        let session = HomeSession(ctx: ctx, home: home, verbose: verbose)
        if needsIdentity, !session.identities.exists { throw MeishiError.noIdentity(home: home.path) }
        return session
    }
}

extension GlobalOptions {
    /// Where the home came from, as `Home.resolve` chose it: an empty MEISHI_HOME is ignored
    /// and said to be, never named as the source of the default.
    func homeSource(_ environment: [String: String]) -> String {
        if home != nil { return "--home" }
        if let env = environment["MEISHI_HOME"], !env.isEmpty { return "MEISHI_HOME" }
        let ignored = environment["MEISHI_HOME"] != nil ? "; MEISHI_HOME is empty and ignored" : ""
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return "XDG_DATA_HOME" + ignored }
        return "the default" + ignored
    }
}

/// One contact named by REF, and `--json`: what `contacts show`, `contacts split` and
/// `friends common` take after the global options.
struct OneContactOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false
}

/// `--event`: the event a meeting is recorded at (exchange, scan, contacts add).
struct EventOption: ParsableArguments {
    @Option(help: ArgumentHelp("Record the meeting as at this event (e.g. \"PyCon JP 2026\").", discussion:
        "Shown by 'contacts show', matched by 'contacts list --event'. Default: MEISHI_EVENT, else 'event' in the configuration file; "
            + "MEISHI_EVENT set empty records no event.",
        valueName: "text"))
    var event: String?

    func validate() throws {
        if let event, !Meeting.isValidEvent(event) { throw ValidationError(MeishiFailure.badEvent("--event")) }
    }

    /// The event to record: --event, else MEISHI_EVENT, else the configuration file's `event`; nil
    /// when none is set, or MEISHI_EVENT is set empty (which cancels the configuration's event
    /// for this command, as an empty variable does elsewhere).
    func resolved(_ ctx: Context) throws -> String? {
        if let event { return event }
        if let env = ctx.environment["MEISHI_EVENT"] {
            if env.trimmingCharacters(in: .whitespaces).isEmpty { return nil }
            guard Meeting.isValidEvent(env) else { throw MeishiFailure(MeishiFailure.badEvent("MEISHI_EVENT"), status: .usage) }
            return env
        }
        return try Settings.load(ctx).event
    }
}

extension LoggingSystem {
    nonisolated(unsafe) private static var bootstrapped = false
    static func bootstrapOnce(level: Logger.Level, sink: Sink) {
        guard !bootstrapped else { return }
        bootstrapped = true
        bootstrap { StderrLogHandler(label: $0, level: level, sink: sink) }
    }
}

extension DisclosureLevel: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

extension FriendsMode: ExpressibleByArgument {
    public static var allValueStrings: [String] { ["ecdh", "verified", "hash", "off"] }
}

/// `--match emails,phones`: what common friends are compared on besides DIDs.
struct MatchArgument: ExpressibleByArgument {
    let emails: Bool
    let phones: Bool

    init?(argument: String) {
        let parts = argument.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.isEmpty, parts.allSatisfy({ ["emails", "phones"].contains($0) }) else { return nil }
        emails = parts.contains("emails")
        phones = parts.contains("phones")
    }
}

extension Trust: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

/// `--mode 644`: the permission bits, in octal, of a file written with `-o` (rwx bits only).
struct FileModeArgument: ExpressibleByArgument {
    let bits: UInt16

    init?(argument: String) {
        guard (1...4).contains(argument.count), argument.allSatisfy({ ("0"..."7").contains($0) }),
              let value = UInt16(argument, radix: 8), value <= 0o777 else { return nil }
        bits = value
    }

    /// Files holding cards or contacts are readable by their owner alone unless the person asks otherwise.
    static let defaultBits: UInt16 = 0o600
    static let help = ArgumentHelp("Permissions of the -o file, in octal (default 600: only you can read it).", valueName: "mode")
}

/// A duration option: `30`, `90s`, `10m`, `24h`, `7d`.
struct DurationArgument: ExpressibleByArgument {
    let seconds: Int64
    init?(argument: String) {
        guard let s = DurationText.seconds(argument) else { return nil }
        seconds = s
    }
    init(seconds: Int64) { self.seconds = seconds }

    /// The `--max-skew` default: the card layer's window (10 minutes).
    static let defaultMaximumSkew = DurationArgument(seconds: CardVerifier.defaultMaximumSkew)
    var defaultValueDescription: String { "\(seconds)s" }
}

/// A field name argument, checked by the card model.
struct FieldArgument: ExpressibleByArgument {
    let name: FieldName
    init?(argument: String) {
        guard let n = try? FieldName(argument) else { return nil }
        name = n
    }
    static var allValueStrings: [String] { FieldName.standard + ["x-<word>"] }
}

/// A comma-separated list of field names; a name that is not a field is refused when the
/// command reads `names`, naming it and the fields there are.
struct FieldListArgument: ExpressibleByArgument {
    let parts: [String]
    init?(argument: String) {
        parts = argument.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !parts.isEmpty else { return nil }
    }

    var names: Set<FieldName> {
        get throws(MeishiError) {
            var out = Set<FieldName>()
            for part in parts {
                do { out.insert(try FieldName(part)) } catch { throw .card(error) }
            }
            return out
        }
    }
}

/// Checks input file arguments where "-" is standard input: at least one, and "-" at most once.
func validateInputFiles(_ files: [String], kind: String) throws {
    guard !files.isEmpty else { throw ValidationError("name at least one \(kind) file, or - for standard input") }
    guard files.filter({ $0 == "-" }).count <= 1 else { throw ValidationError("standard input can be read only once") }
}
