import ArgumentParser
import Foundation
import Logging
import MeishiCard
import MeishiKit
import MeishiStore

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Use DIR as the meishi home.", discussion:
        "Overrides MEISHI_HOME and XDG_DATA_HOME; the default is ~/.local/share/meishi.", valueName: "dir"))
    var home: String?

    @Flag(name: .shortAndLong, help: "Print diagnostics on standard error.")
    var verbose = false

    /// The environment the command runs in.
    func context() throws -> Context {
        LoggingSystem.bootstrapOnce(level: verbose ? .debug : (ProcessInfo.processInfo.environment["MEISHI_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .warning))
        let env = ProcessInfo.processInfo.environment
        return Context(home: try Home.resolve(flag: home, environment: env), environment: env, now: Date())
    }
}

/// What a command runs against: the home, the environment and the clock.
struct Context {
    let home: Home
    let environment: [String: String]
    let now: Date

    var identities: IdentityStore { IdentityStore(home: home) }
    var cards: CardService { CardService(home: home) }
    var contacts: ContactsService { ContactsService(home: home) }
    var passphrases: TerminalPassphrases { TerminalPassphrases(environment: environment) }

    func loadIdentity() throws -> Identity {
        try identities.load(passphrases: passphrases)
    }
}

extension LoggingSystem {
    nonisolated(unsafe) private static var bootstrapped = false
    static func bootstrapOnce(level: Logger.Level) {
        guard !bootstrapped else { return }
        bootstrapped = true
        bootstrap { StderrLogHandler(label: $0, level: level) }
    }
}

extension DisclosureLevel: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

extension Trust: ExpressibleByArgument {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

/// A duration option: `30`, `90s`, `10m`, `24h`, `7d`.
struct DurationArgument: ExpressibleByArgument {
    let seconds: Int64
    init?(argument: String) {
        guard let s = DurationText.seconds(argument) else { return nil }
        seconds = s
    }
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

/// A comma-separated list of field names.
struct FieldListArgument: ExpressibleByArgument {
    let names: Set<FieldName>
    init?(argument: String) {
        var out = Set<FieldName>()
        for part in argument.split(separator: ",") {
            guard let n = try? FieldName(part.trimmingCharacters(in: .whitespaces)) else { return nil }
            out.insert(n)
        }
        guard !out.isEmpty else { return nil }
        names = out
    }
}
