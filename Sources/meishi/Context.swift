import ArgumentParser
import Foundation
import MeishiCrypto
import MeishiCard
import MeishiKit
import MeishiQR

/// Where a command's bytes go: standard output or error, or a recorder in tests.
struct Sink: Sendable {
    let write: @Sendable ([UInt8]) -> Void

    static let standardOutput = Sink { bytes in FileHandle.standardOutput.write(Data(bytes)) }
    static let standardError = Sink { bytes in FileHandle.standardError.write(Data(bytes)) }
}

/// The controlling terminal as commands see it: whether there is one, its width, questions.
/// How a question on the terminal ended.
/// What a prompt without echo read: a line, or the end of input (Ctrl-D) before one.
enum HiddenReply {
    case text(SecureBytes)
    case ended
}

enum TerminalReply: Equatable {
    case line(String)
    case timedOut
    case ended

    var text: String? { if case .line(let s) = self { s } else { nil } }
}

protocol TerminalIO: Sendable {
    /// A person can answer questions (standard input is a terminal and /dev/tty opens).
    var isInteractive: Bool { get }
    var standardOutputIsTerminal: Bool { get }
    var standardErrorIsTerminal: Bool { get }
    /// Columns, when known.
    var width: Int? { get }
    /// Rows, when known.
    var height: Int? { get }
    /// Shows `question` and says how it was answered: the line typed (without its newline), its
    /// `timeout` passed, or no answer (no terminal, end of input, the question withdrawn). The
    /// caller cannot tell a timeout from Ctrl-D by the clock: the last wait ends up to a
    /// millisecond early.
    func reply(_ question: String, timeout: Double?) -> TerminalReply
    /// Shows `prompt` and reads a line without echo, or nil with no terminal.
    func readHidden(_ prompt: String) -> HiddenReply?
    /// Blocks until the person presses Enter or Ctrl-D on the terminal (a table's end).
    func waitForEndOfLine()
}

extension TerminalIO {
    /// Without a terminal of its own, nobody presses anything: blocks for good.
    func waitForEndOfLine() {
        while true { sleep(3600) }
    }
}

/// Everything a command may touch of the world (swiftly's `SwiftlyCoreContext`): no command calls
/// `Date()`, `print`, `isatty` or opens /dev/tty itself, so tests run commands in-process.
struct Context: Sendable {
    var environment: [String: String]
    var workingDirectory: String
    var clock: @Sendable () -> Date
    var standardOutput: Sink
    var standardError: Sink
    /// Reads standard input, at most `limit + 1` bytes.
    var readStandardInput: @Sendable (_ limit: Int) throws(MeishiError) -> [UInt8]
    var terminal: TerminalIO
    /// Runs an editor command (`$VISUAL`/`$EDITOR`, through the shell as git does) on a file at the
    /// terminal, with an environment; returns its exit status. Tests replace it with a script.
    var runEditor: @Sendable (_ editor: String, _ path: String, _ environment: [String: String]) throws -> Int32 = Context.shellEditor
    /// Opens a camera device for `scan --camera`; tests replace it with a sequence of images.
    var openCamera: @Sendable (_ device: String) throws(MeishiError) -> any FrameSource = { device throws(MeishiError) in
        try CameraScan.open(device)
    }

    /// The real process: its environment, clock, standard streams and terminal.
    static func live() -> Context {
        Context(environment: ProcessInfo.processInfo.environment, workingDirectory: FileManager.default.currentDirectoryPath,
                clock: { Date() }, standardOutput: .standardOutput, standardError: .standardError,
                readStandardInput: { limit throws(MeishiError) in try SecureFile.read("-", limit: limit) },
                terminal: LiveTerminal())
    }

    /// The live editor: `/bin/sh -c 'EDITOR "$1"'` given the process's terminal (`EditorProcess`).
    static func shellEditor(_ editor: String, _ path: String, _ environment: [String: String]) throws -> Int32 {
        try EditorProcess.run(editor, path, environment: environment)
    }

    /// Colours and other escape sequences on standard output: only on a terminal, and never with
    /// NO_COLOR set (no-color.org).
    var usesColour: Bool { terminal.standardOutputIsTerminal && (environment["NO_COLOR"] ?? "").isEmpty }

    var now: Date { clock() }
    /// The current time in Unix seconds.
    var unixNow: Int64 { Int64(clock().timeIntervalSince1970) }
    var unixClock: @Sendable () -> Int64 { { [clock] in Int64(clock().timeIntervalSince1970) } }

    /// Notes, warnings and hints are wrapped at spaces to the width of a terminal on standard error.
    var out: Console {
        Console(standardOutput: standardOutput, standardError: standardError,
                messageWidth: terminal.standardErrorIsTerminal ? terminal.width : nil)
    }
    /// The passphrase agent of this command line (`--remember`, `meishi lock`).
    var agent = Agent()
    var passphrases: TerminalPassphrases {
        TerminalPassphrases(environment: environment, terminal: terminal, console: out, remembered: agent)
    }

    /// A file's bytes, or standard input's for "-"; more than `limit` bytes is `fileTooLarge`
    /// (its real size is never guessed from the `limit + 1` bytes read).
    func read(_ path: String, limit: Int) throws(MeishiError) -> [UInt8] {
        path == "-" ? try readStandardInput(limit) : try SecureFile.read(path, limit: limit)
    }

    /// A note as typed, or read from standard input for `-` (one trailing newline dropped); the
    /// one reader for `send TEXT|-` and `exchange --message TEXT|-`.
    func readNote(_ text: String, example: String) throws -> String {
        var note = text
        if text == "-" {
            if terminal.isInteractive { out.note(Self.waitingForStandardInput("the note", example: example)) }
            // Up to the limit, a newline and one byte more: past that, only "over the limit" is known.
            let limit = MessageEnvelope.maximumTextBytes + 1
            let bytes = try readStandardInput(limit)
            if bytes.count > limit { throw MeishiFailure.noteOverLimit }
            guard let s = String(validating: bytes, as: UTF8.self) else { throw MeishiFailure.standardInputNotText }
            note = s.hasSuffix("\n") ? String(s.dropLast()) : s
        }
        // Empty or only blanks, given as TEXT or on standard input: refused the same way.
        if note.allSatisfy({ $0.isWhitespace }) { throw MeishiFailure(MessageEnvelopeError.emptyText) }
        return note
    }

    func readAtMost(_ path: String, limit: Int) throws(MeishiError) -> [UInt8] {
        let bytes = try read(path, limit: limit)
        guard bytes.count <= limit else { throw .fileTooLarge(path: path == "-" ? "standard input" : path, limit: limit) }
        return bytes
    }
}

/// A command that runs on an injected `Context`.
protocol MeishiCommand: AsyncParsableCommand {
    func run(_ ctx: Context) async throws
    /// Runs the command on the calling thread and returns true when it never awaits; returns false
    /// without doing anything when only `run(_:) async` can run it.
    func runSynchronously(_ ctx: Context) throws -> Bool
}

extension MeishiCommand {
    mutating func run() async throws { try await run(Context.live()) }
    func runSynchronously(_ ctx: Context) throws -> Bool { false }
}

/// A command whose work never awaits: `meishi` runs it on the main thread, so the process starts
/// no thread of Swift concurrency (each costs a clone and a wake-up on a busy machine).
protocol SynchronousCommand: MeishiCommand {
    func run(_ ctx: Context) throws
}

extension SynchronousCommand {
    func runSynchronously(_ ctx: Context) throws -> Bool {
        try run(ctx)
        return true
    }
}

/// What a command needs of its home: resolved once from `--home` and the environment.
struct HomeSession {
    let ctx: Context
    let home: Home
    /// --verbose: say what each step does on standard error.
    var verbose = false

    /// A `meishi: debug: …` line on standard error with --verbose.
    func step(_ text: @autoclosure () -> String) {
        if verbose { ctx.out.debug(text()) }
    }

    var identities: IdentityStore { IdentityStore(home: home) }
    var cards: CardService {
        step("card \(home.cardPath)")
        return CardService(home: home)
    }
    var contacts: ContactsService {
        step("contacts \(home.databasePath)")
        return ContactsService(home: home, clock: ctx.unixClock)
    }

    func loadIdentity() throws(MeishiError) -> Identity {
        step("secret key \(home.secretKeyPath)")
        return try identities.load(passphrases: ctx.passphrases)
    }
}

extension Context {
    /// The note shown while meishi waits for standard input on a terminal.
    static func waitingForStandardInput(_ what: String, example: String = "meishi scan - < photo.png") -> String {
        "waiting for \(what) on standard input (Ctrl-D ends it; e.g. \(example))"
    }
}

extension TerminalIO {
    /// The line typed in answer to `question`; nil with no terminal, no answer or `timeout` passed.
    func ask(_ question: String, timeout: Double?) -> String? { reply(question, timeout: timeout).text }
}
