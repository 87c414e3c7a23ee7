import ArgumentParser
import Foundation
import MeishiKit
import MeishiProximity

@main
struct Meishi: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "meishi",
        abstract: "Swap signed contact cards in person, with no server and no internet.",
        discussion: """
            meishi keeps one identity (an Ed25519 did:key) and one card per person. Cards travel as \
            signed ProximityPayloads that anyone can verify, and verified contacts are kept in a \
            local SQLite store.

            Examples:
              meishi init && meishi card set name "Mei Tanaka"
              meishi exchange
            """,
        version: version,
        subcommands: [Init.self, Id.self, PassphraseCommand.self, CardCommand.self, Verify.self, Scan.self, Exchange.self,
                      Contacts.self, Friends.self, Send.self, Listen.self, Inbox.self, Backup.self, Restore.self, Lock.self])

    /// Synchronous on purpose: `--version`, help, errors and every `SynchronousCommand` finish on
    /// the main thread; only a command that awaits (exchange, send, listen) starts Swift
    /// concurrency, whose threads cost a start-up measured in `make bench-startup`.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let ctx = Context.live()
        switch start(arguments: arguments, in: ctx) {
        case .finished(let status):
            Foundation.exit(status)
        case .needsConcurrency(let command):
            // The command as parsed, not parsed again in the task: parsing `exchange` takes
            // milliseconds (the argument parser reflects on every option), a pairing's own budget.
            let parsed = Parsed(command: command)
            // A pairwise exchange runs its tasks and the network on one thread (`EventLoopExecutor`).
            // Not the rest yet: at a table, seven pairings on one thread lost one to a reset in
            // 1 of 8 runs of anEndedTableLetsPairingsInProgressFinish under load (0 of 8 on the pool).
            if let exchange = command as? Exchange, exchange.table == nil { EventLoopExecutor.install() }
            Task { Foundation.exit(await finish(parsed.command, arguments, ctx)) }
            dispatchMain()
        }
    }

    /// A parsed command handed once from the main thread to the task that runs it, and used by
    /// that task alone.
    struct Parsed: @unchecked Sendable {
        let command: any MeishiCommand
    }

    /// The subcommand names at the start of `arguments` ("card", "set"), for help hints.
    static func commandPath(_ arguments: [String]) -> [String] {
        var path: [String] = []
        var level: [ParsableCommand.Type] = configuration.subcommands
        for arg in arguments {
            guard let next = level.first(where: { $0._commandName == arg }) else { break }
            path.append(arg)
            level = next.configuration.subcommands
        }
        return path
    }

    /// Moves global options written before the subcommand (`meishi --home X init`) after it,
    /// where every subcommand accepts them.
    static func hoistingGlobalOptions(_ arguments: [String]) -> [String] {
        let (globals, rest) = leadingGlobalOptions(arguments)
        guard !globals.isEmpty else { return arguments }
        let path = commandPath(Array(rest))
        guard !path.isEmpty else { return arguments }
        return path + globals + rest.dropFirst(path.count)
    }

    /// The global options at the start of `arguments` (`--home X`, `--home=X`, `-v`), and the rest.
    static func leadingGlobalOptions(_ arguments: [String]) -> (globals: [String], rest: ArraySlice<String>) {
        var globals: [String] = []
        var rest = arguments[...]
        while let first = rest.first {
            if first == "--home", rest.count >= 2 {
                globals += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--home=") || first == "-v" || first == "--verbose" {
                globals.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        return (globals, rest)
    }

    /// The first word that should name a command and names none, with the commands it could have
    /// meant: `meishi crad show` → ("crad", ["card"], []), `meishi help nosuch` likewise. Nil when
    /// every word up to the first option or argument names a command.
    static func unknownCommand(_ arguments: [String]) -> (word: String, path: [String], suggestions: [String])? {
        // Global options before the command (`meishi --home X crad`) are not commands.
        var words = leadingGlobalOptions(arguments).rest
        if words.first == "help" { words = words.dropFirst() }
        var level: [ParsableCommand.Type] = configuration.subcommands
        var path: [String] = []
        for word in words {
            guard !word.hasPrefix("-"), !level.isEmpty else { return nil }
            if let next = level.first(where: { $0._commandName == word }) {
                path.append(word)
                level = next.configuration.subcommands
                continue
            }
            let names = level.map { $0._commandName }
            let close = names.filter { editDistance($0, word) <= (word.count <= 3 ? 1 : 2) || $0.hasPrefix(word) }
            return (word, path, close)
        }
        return nil
    }

    /// Levenshtein distance between two short words.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var row = Array(0...b.count)
        for i in 0..<a.count {
            var diagonal = row[0]
            row[0] = i + 1
            for j in 0..<b.count {
                let above = row[j + 1]
                let substitution = diagonal + (a[i] == b[j] ? 0 : 1)
                row[j + 1] = Swift.min(above + 1, row[j] + 1, substitution)
                diagonal = above
            }
        }
        return row[b.count]
    }

    /// What `start` left to do: nothing but exit with a status, or run a command that awaits.
    enum Start {
        case finished(Int32)
        case needsConcurrency(any MeishiCommand)
    }

    /// Parses one command line on `ctx` and runs it when that needs no Swift concurrency, printing
    /// errors as `meishi: error: …`.
    static func start(arguments: [String], in ctx: Context) -> Start {
        if let unknown = unknownCommand(arguments) {
            return .finished(fail(.unknownCommand(unknown.word, under: unknown.path, suggestions: unknown.suggestions), arguments, ctx))
        }
        do {
            var command = try parseAsRoot(RelayChoice.expandingBareRelay(Exchange.expandingBareCode(hoistingGlobalOptions(arguments))))
            if let meishiCommand = command as? any MeishiCommand {
                if try !meishiCommand.runSynchronously(ctx) { return .needsConcurrency(meishiCommand) }
            } else {
                // A command group without a subcommand: argument parser prints its help.
                try command.run()
            }
            return .finished(0)
        } catch {
            return .finished(status(for: error, arguments, ctx))
        }
    }

    /// Parses and runs one command line on `ctx`, printing errors as `meishi: error: …`; returns
    /// the exit status. Tests call it in-process with a recording context.
    static func run(arguments: [String], in ctx: Context) async -> Int32 {
        switch start(arguments: arguments, in: ctx) {
        case .finished(let status):
            return status
        case .needsConcurrency(let command):
            return await finish(command, arguments, ctx)
        }
    }

    /// Runs a parsed command that awaits; its exit status, after printing what it threw.
    static func finish(_ command: any MeishiCommand, _ arguments: [String], _ ctx: Context) async -> Int32 {
        do {
            try await command.run(ctx)
            return 0
        } catch {
            return status(for: error, arguments, ctx)
        }
    }

    /// Reports a failure (with --json, also as one JSON document on standard output, so scripts
    /// never parse standard error; this is the one place failures become output); its status.
    private static func fail(_ failure: MeishiFailure, _ arguments: [String], _ ctx: Context) -> Int32 {
        ctx.out.report(failure)
        if arguments.prefix(while: { $0 != "--" }).contains("--json") { ctx.out.json(failure.jsonDocument) }
        return failure.status.rawValue
    }

    /// The exit status for what a command threw, after printing it.
    private static func status(for error: any Error, _ arguments: [String], _ ctx: Context) -> Int32 {
        switch error {
        case let failure as MeishiFailure:
            return fail(failure, arguments, ctx)
        case let error as MeishiError:
            return fail(MeishiFailure(error), arguments, ctx)
        case let code as ExitCode:
            return code.rawValue
        default:
            let code = exitCode(for: error)
            if code == .success {
                ctx.out.line(fullMessage(for: error))
                return 0
            }
            return fail(.usage(message(for: error), command: commandPath(hoistingGlobalOptions(arguments)),
                               status: code == .validationFailure ? .usage : ExitStatus(rawValue: code.rawValue) ?? .usage),
                        arguments, ctx)
        }
    }
}
