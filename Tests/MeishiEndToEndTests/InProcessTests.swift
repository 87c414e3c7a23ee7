import ArgumentParser
import Foundation
import Testing
import MeishiCrypto
import MeishiKit
@testable import meishi

/// Runs `meishi` commands in this process on a recorded context: a fixed clock, captured
/// standard output and error, scripted answers at the terminal. Faster than spawning, and the
/// prompts can be answered.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var out: [UInt8] = []
    private var err: [UInt8] = []
    private var answers: [String]
    private(set) var questions: [String] = []

    init(answers: [String] = []) { self.answers = answers }

    var stdout: String { lock.withLock { String(decoding: out, as: UTF8.self) } }
    var stderr: String { lock.withLock { String(decoding: err, as: UTF8.self) } }

    func appendOut(_ b: [UInt8]) { lock.withLock { out += b } }
    func appendErr(_ b: [UInt8]) { lock.withLock { err += b } }
    func answer(_ question: String) -> String? {
        lock.withLock {
            questions.append(question)
            return answers.isEmpty ? nil : answers.removeFirst()
        }
    }
    func reset() { lock.withLock { out = []; err = [] } }
}

/// A terminal that answers from a script (nil: no terminal at all).
struct ScriptedTerminal: TerminalIO {
    let recorder: Recorder
    let interactive: Bool
    /// Standard output is a terminal of `columns` x `rows` (a pipe when false).
    var outputIsTerminal = false
    var columns: Int? = 80
    var rows: Int? = 24
    var isInteractive: Bool { interactive }
    var standardOutputIsTerminal: Bool { outputIsTerminal }
    /// Standard error is a terminal too (of the same width).
    var errorIsTerminal = false
    var standardErrorIsTerminal: Bool { errorIsTerminal }
    var width: Int? { columns }
    var height: Int? { rows }
    /// The answer that stands for Ctrl-D at the start of a line (the end of input).
    static let endOfInput = "\u{4}"

    func reply(_ question: String, timeout: Double?) -> TerminalReply {
        guard interactive, let a = recorder.answer(question), a != Self.endOfInput else { return .ended }
        return .line(a)
    }
    func readHidden(_ prompt: String) -> HiddenReply? {
        guard interactive, let a = recorder.answer(prompt) else { return nil }
        return a == Self.endOfInput ? .ended : .text(SecureBytes(copying: Array(a.utf8)))
    }
}

struct InProcess {
    let home = Fixtures.temporaryDirectory() + "/home"
    let recorder: Recorder
    var now = Date(timeIntervalSince1970: 1_800_000_000)
    var interactive: Bool
    var environment: [String: String] = [:]
    var stdin: [UInt8] = []
    /// Replaces the editor `card edit` runs.
    var editor: (@Sendable (_ editor: String, _ path: String, _ environment: [String: String]) throws -> Int32)?
    /// Standard output is a terminal of this size (nil: a pipe).
    var outputTerminal: (columns: Int, rows: Int)?
    /// With `outputTerminal`: standard error is that terminal too (messages are wrapped to it).
    var errorTerminal = false

    init(answers: [String] = [], interactive: Bool = false) {
        recorder = Recorder(answers: answers)
        self.interactive = interactive
    }

    var context: Context {
        let rec = recorder, input = stdin, clock = now
        var ctx = Context(environment: ["MEISHI_HOME": home].merging(environment) { $1 }, workingDirectory: "/",
                       clock: { clock }, standardOutput: Sink { rec.appendOut($0) }, standardError: Sink { rec.appendErr($0) },
                       readStandardInput: { limit in Array(input.prefix(limit + 1)) },
                       terminal: ScriptedTerminal(recorder: rec, interactive: interactive, outputIsTerminal: outputTerminal != nil,
                                                  columns: outputTerminal?.columns ?? 80, rows: outputTerminal?.rows ?? 24,
                                                  errorIsTerminal: errorTerminal && outputTerminal != nil))
        if let editor { ctx.runEditor = editor }
        return ctx
    }

    /// Runs one command line; returns its status, standard output and error.
    @discardableResult
    func callAsFunction(_ args: String...) async -> (status: Int32, out: String, err: String) {
        await callAsFunction(args)
    }

    /// Runs one command line given as an array.
    @discardableResult
    func callAsFunction(_ args: [String]) async -> (status: Int32, out: String, err: String) {
        recorder.reset()
        let status = await Meishi.run(arguments: args, in: context)
        return (status, recorder.stdout, recorder.stderr)
    }
}

@Suite struct InProcessCommandTests {
    /// At 40 columns the question "Check that the other screen shows 123 456 — same? [y/N]"
    /// wrapped inside the digits (a tester's finding); a narrow terminal now gets the code on a
    /// line of its own, a wide one the single line.
    @Test func theCodeToCompareIsNeverCutByANarrowTerminal() {
        let recorder = Recorder(answers: ["y", "n"])
        var terminal = ScriptedTerminal(recorder: recorder, interactive: true)
        terminal.columns = 40
        #expect(terminal.confirmCode("123 456"))
        terminal.columns = 100
        #expect(!terminal.confirmCode("123 456"))
        #expect(recorder.questions == ["Check that the other screen shows\n    123 456\nsame? [y/N] ",
                                       "Check that the other screen shows 123 456 — same? [y/N] "])
        for line in recorder.questions[0].split(separator: "\n") { #expect(line.count < 40) }
    }

    @Test func cardTravelsExportVerifyStoreWithAFixedClock() async throws {
        var mei = InProcess()
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").out.hasPrefix("name = Mei Tanaka (public)\nnext: meishi card add email"))
        #expect(await mei("card", "add", "email", "mei@example.org").status == 0)
        let exported = await mei("card", "export")
        #expect(exported.status == 0, "\(exported.err)")
        // The clock is the context's: the card is signed at its time, and verified 30 s later.
        #expect(exported.out.contains("\"timestamp\":1800000000"))
        var ken = InProcess()
        #expect(await ken("init").status == 0)
        ken.stdin = Array(exported.out.utf8)
        ken.now = mei.now.addingTimeInterval(30)
        let verified = await ken("verify", "-")
        #expect(verified.status == 0)
        #expect(verified.out.hasPrefix("valid card from Mei Tanaka\n  name         Mei Tanaka\n  email        mei@example.org\n  did"))
        #expect(verified.out.contains("signed       2027-01-15T08:00:00Z (30 s ago)"))
        let added = await ken("contacts", "add", "-")
        #expect(added.out.hasPrefix("added Mei Tanaka as #1 (signed) did:key:z6Mk"))
        // The store keeps the bytes that arrived, exactly (here with the newline export wrote).
        let store = try ContactsService(home: Home(path: ken.home)).open()
        #expect(try store.resolve("Mei").payload == Data(exported.out.utf8))
        mei.stdin = Array(exported.out.utf8)
        #expect(await mei("contacts", "add", "-").err == "meishi: error: that is your own card\n")
    }

    /// `card import` asks each value's level at the terminal; `card edit` runs the context's
    /// editor; `contacts import -` reads the context's standard input.
    @Test func vcardCommandsRunOnTheContext() async throws {
        var mei = InProcess(answers: ["pers", "", "public"], interactive: true)
        #expect(await mei("init").status == 0)
        let vcf = Fixtures.temporaryDirectory() + "/me.vcf"
        try Data("BEGIN:VCARD\nVERSION:3.0\nFN:Mei Tanaka\nEMAIL:mei@example.org\nTEL:+81 90 1234 5678\nEND:VCARD\n".utf8)
            .write(to: URL(fileURLWithPath: vcf))
        let imported = await mei("card", "import", vcf)
        #expect(imported.status == 0, "\(imported.err)")
        #expect(mei.recorder.questions.count == 3)
        #expect(mei.recorder.questions.first == "level for name Mei Tanaka? public/professional/personal [public] ")
        #expect(imported.out == "name = Mei Tanaka (personal)\nemail = mei@example.org (professional)\nphone = +81 90 1234 5678 (public)\n")

        mei.editor = { _, path, _ in
            let text = try String(contentsOfFile: path, encoding: .utf8)
            try (text + "title [public]: Engineer\n").write(toFile: path, atomically: false, encoding: .utf8)
            return 0
        }
        let edited = await mei("card", "edit")
        #expect(edited.out == "saved your card (4 values)\n", "\(edited.err)")
        #expect(await mei("card", "show").out.split(separator: "\n").contains { $0.hasPrefix("  title  Engineer ") && $0.hasSuffix(" [public]") })
        mei.editor = { _, _, _ in 3 }
        #expect(await mei("card", "edit").err == "meishi: error: the editor vi failed (exit 3); your card is unchanged\n")

        mei.stdin = Array("BEGIN:VCARD\nFN:Ken Sato\nEMAIL:ken@example.org\nEND:VCARD\n".utf8)
        let contacts = await mei("contacts", "import", "-")
        #expect(contacts.out == "imported Ken Sato as #1 (unsigned)\n1 imported, 0 merged, 0 skipped\n", "\(contacts.err)")
    }

    @Test func passphrasePromptsAreAnsweredAtTheTerminal() async throws {
        let mei = InProcess(answers: ["correct horse", "correct horse", "correct horse"], interactive: true)
        let created = await mei("init", "--passphrase")
        #expect(created.status == 0, "\(created.err)")
        #expect(mei.recorder.questions == ["new passphrase: ", "repeat passphrase: "])
        #expect(await mei("id").out.contains("(encrypted)"))
        #expect(await mei("card", "set", "name", "Mei").status == 0)
        #expect(await mei("card", "export").status == 0)
        #expect(mei.recorder.questions.last == "passphrase for \(mei.home)/identity.key: ")

        let typo = InProcess(answers: ["one", "two"], interactive: true)
        let r = await typo("init", "--passphrase")
        #expect(r.status == 77 && r.err.contains("meishi: error: the passphrases do not match; nothing was changed\n"), "\(r.err)")
        #expect(!FileManager.default.fileExists(atPath: typo.home + "/identity.key"))

        // Ctrl-D at the prompt cancels it (it was "the passphrase is empty", exit 64).
        for answers in [[ScriptedTerminal.endOfInput], ["one", ScriptedTerminal.endOfInput]] {
            let ended = InProcess(answers: answers, interactive: true)
            let r = await ended("init", "--passphrase")
            #expect(r.status == 1 && r.err.hasSuffix("meishi: error: cancelled at the passphrase prompt (end of input): nothing was done\n"), "\(r.err)")
            #expect(!FileManager.default.fileExists(atPath: ended.home + "/identity.key"))
        }

        let noTerminal = InProcess()
        let r2 = await noTerminal("init", "--passphrase")
        #expect(r2.status == 64 && r2.err.contains("--passphrase needs a terminal or MEISHI_PASSPHRASE"))
    }

    @Test func exchangeWithoutATerminalNeedsYes() async {
        let mei = InProcess()
        let r = await mei("exchange")
        #expect(r.status == 64)
        #expect(r.err == "meishi: error: comparing the code needs a terminal\nmeishi: hint: run it on a terminal, use --code on both sides, or pass --yes (contacts are then stored as 'signed')\n")
    }

    @Test func errorsNameTheProblemAndTheFix() async {
        let mei = InProcess()
        #expect(await mei("card", "export").err == "meishi: error: no identity in \(mei.home)\nmeishi: hint: run 'meishi init' to create one there, or check --home and MEISHI_HOME\n")
        #expect(await mei("init").status == 0)
        let noName = await mei("card", "export")
        #expect(noName.status == 65 && noName.err.hasPrefix("meishi: error: your card has no name\n"))
        #expect(await mei("card", "set", "name", "Mei").status == 0)
        #expect(await mei("card", "add", "email", "m@example.org").status == 0)
        let left = await mei("card", "export", "--fields", "email")
        #expect(left.status == 64)
        #expect(left.err == "meishi: error: every card carries the name, and --fields leaves it out\nmeishi: hint: add name to --fields, e.g. --fields name,email\n")
        let again = await mei("init")
        #expect(again.status == 1 && again.err.contains("an identity already exists"))
        let dir = Fixtures.temporaryDirectory()
        let toDir = await mei("card", "export", "-o", dir)
        #expect(toDir.status == 1 && toDir.err == "meishi: error: cannot write \(dir): it is a directory\nmeishi: hint: name a file inside it: -o \(dir)/NAME\n")
    }

    /// A mistyped command is named, with the nearest ones; `help` of a command that does not exist
    /// is an error too (issue 12).
    @Test func mistypedCommandsSuggestTheNearest() async {
        let mei = InProcess()
        var r = await mei("crad", "show")
        #expect(r.status == 64 && r.err == "meishi: error: 'crad' is not a command of 'meishi'\nmeishi: hint: did you mean 'meishi card'?\n")
        r = await mei("contacts", "lst")
        #expect(r.status == 64 && r.err.contains("did you mean 'meishi contacts list'?"))
        r = await mei("help", "nosuch")
        #expect(r.status == 64 && r.out.isEmpty && r.err.hasPrefix("meishi: error: 'nosuch' is not a command of 'meishi'\n"))
        r = await mei("help", "card", "set")
        #expect(r.status == 0 && r.out.hasPrefix("OVERVIEW: Set a field"))
        r = await mei("card", "set", "nmae", "Mei")
        #expect(r.status != 0 && !r.err.contains("is not a command"), "a field name is an argument, not a command: \(r.err)")
        #expect(Meishi.editDistance("crad", "card") == 2 && Meishi.editDistance("", "ab") == 2 && Meishi.editDistance("list", "list") == 0)
    }

    @Test(arguments: [("30", Int64(30)), ("90s", 90), ("10m", 600), ("24h", 86400), ("7d", 604_800), ("10M", 600)] as [(String, Int64)])
    func durations(_ text: String, _ seconds: Int64) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test(arguments: ["", "m", "-5", "1.5m", "10w", "ten"])
    func badDurations(_ text: String) {
        #expect(DurationText.seconds(text) == nil)
    }
}

/// `--help` of every command, and the man page, checked against the command tree.
@Suite struct HelpSnapshotTests {
    /// Every command path: [], ["card"], ["card", "set"], …
    static func paths(_ type: ParsableCommand.Type = Meishi.self, prefix: [String] = []) -> [(path: [String], type: ParsableCommand.Type)] {
        [(prefix, type)] + type.configuration.subcommands.flatMap { paths($0, prefix: prefix + [$0._commandName]) }
    }

    /// `--help` at 100 columns matches fixtures/help/<path>.txt (MEISHI_WRITE_SNAPSHOTS=1 rewrites them).
    @Test func helpMatchesSnapshots() throws {
        let write = ProcessInfo.processInfo.environment["MEISHI_WRITE_SNAPSHOTS"] == "1"
        let dir = Fixtures.url("help")
        if write { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        let all = Self.paths()
        #expect(all.count >= 16)
        for (path, type) in all {
            let name = (["meishi"] + path).joined(separator: "-") + ".txt"
            let help = Meishi.helpMessage(for: type, columns: 100) + "\n"
            let url = dir.appendingPathComponent(name)
            if write { try help.write(to: url, atomically: true, encoding: .utf8) }
            let snapshot = try? String(contentsOf: url, encoding: .utf8)
            #expect(snapshot == help, "fixtures/help/\(name) is stale: run MEISHI_WRITE_SNAPSHOTS=1 swift test --filter HelpSnapshotTests")
        }
    }

    /// man/meishi.1 documents every command and every option of the tree (make test also
    /// regenerates it and compares the whole text: scripts/check-man.sh).
    @Test func manPageCoversEveryCommandAndOption() throws {
        let man = try String(contentsOf: Fixtures.root.appendingPathComponent("man/meishi.1"), encoding: .utf8)
        for (path, type) in Self.paths() where !path.isEmpty {
            #expect(man.contains(".It Em \(path.last!)\n"), "man page lacks the command \(path)")
            #expect(man.contains(type.configuration.abstract), "man page lacks the abstract of \(path)")
            let help = Meishi.helpMessage(for: type, columns: 200)
            let options = help.split(separator: "\n").compactMap { line -> String? in
                guard let m = line.firstMatch(of: /^  (?:-\w, )?--([a-z0-9-]+)/) else { return nil }
                return String(m.1)
            }
            let itemLines = man.split(separator: "\n").filter { $0.hasPrefix(".It Fl ") }
            for option in Set(options) where option != "help" && option != "version" {
                #expect(itemLines.contains { $0.contains("-\(option) ") || $0.hasSuffix("-\(option)") }, "man page lacks --\(option) of \(path)")
            }
        }
    }
}
