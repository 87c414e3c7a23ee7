import Foundation
import Testing

/// `card edit` with a real `vi` on a pseudo-terminal (tools/pty-session.py): the editor gets the
/// terminal, and Ctrl-C ends the editor, never meishi, leaving no temporary file.
@Suite struct CardEditTerminalTests {
    static let python = InteropTests.which("python3")
    static let vi = InteropTests.which("vi")
    static var toolsPresent: Bool { python != nil && vi != nil }

    struct Session {
        let status: Int?
        let failedStep: Int?
        let output: String
    }

    /// Runs `meishi card edit` in `cli`'s home on a new terminal with EDITOR `editor`, playing `steps`.
    static func edit(_ cli: CLI, editor: String, _ steps: [[Any]]) throws -> Session {
        let scratch = (cli.home as NSString).deletingLastPathComponent
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python!)
        let stepsJSON = String(decoding: try JSONSerialization.data(withJSONObject: steps), as: UTF8.self)
        p.arguments = [Fixtures.root.appendingPathComponent("tools/pty-session.py").path, stepsJSON, CLI.binary, "card", "edit"]
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = cli.home
        env["HOME"] = scratch  // no one's vimrc or viminfo
        env["TERM"] = "xterm"
        env["EDITOR"] = editor
        env["VISUAL"] = nil
        env["MEISHI_PASSPHRASE"] = nil
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return Session(status: doc["status"] as? Int, failedStep: doc["failedStep"] as? Int, output: doc["output"] as? String ?? "")
    }

    /// The temporary files of `card edit` left in the home (`card-edit-XXXXXX.txt`).
    static func editFiles(_ cli: CLI) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: cli.home)) ?? []).filter { $0.hasPrefix("card-edit") }
    }

    /// The card's first title, from `card show --json`.
    static func title(_ cli: CLI) throws -> String? {
        let fields = try cli("card", "show", "--json").json["fields"] as? [String: Any]
        return (fields?["title"] as? [[String: Any]])?.first?["value"] as? String
    }

    @Test(.enabled(if: toolsPresent, "skipped: needs python3 and vi"))
    func viOpensAndWriteQuitSaves() throws {
        let mei = try CLI.withCard()
        let s = try Self.edit(mei, editor: "vi", [
            ["expect", "FIELD [LEVEL]: VALUE"],
            ["send", "Gotitle: Engineer from vi\u{1B}"],
            ["send", ":wq\r"],
            ["expect", "saved your card"],
        ])
        #expect(s.failedStep == nil && s.status == 0, "vi did not get the terminal: \(s.output.suffix(600))")
        #expect(try Self.title(mei) == "Engineer from vi")
        #expect(Self.editFiles(mei).isEmpty)
    }

    /// Ctrl-Z in vi suspends the job as a shell sees it: meishi stops too, with the terminal taken
    /// back; on `fg` (SIGCONT) vi has the terminal again and the edit goes on.
    @Test(.enabled(if: toolsPresent, "skipped: needs python3 and vi"))
    func ctrlZSuspendsAndFgResumes() throws {
        let mei = try CLI.withCard()
        let s = try Self.edit(mei, editor: "vi", [
            ["expect", "FIELD [LEVEL]: VALUE"],
            ["send", "\u{1A}"],
            ["stopped", 0],
            ["continue", 0],
            ["sleep", 0.5],
            ["send", "Gotitle: Engineer from vi\u{1B}"],
            ["send", ":wq\r"],
            ["expect", "saved your card"],
        ])
        #expect(s.failedStep == nil && s.status == 0, "\(s.failedStep.map(String.init) ?? "-"): \(s.output.suffix(600))")
        #expect(try Self.title(mei) == "Engineer from vi")
    }

    @Test(.enabled(if: toolsPresent, "skipped: needs python3 and vi"))
    func ctrlCReachesTheEditorAloneAndLeavesNoFile() throws {
        let mei = try CLI.withCard()
        // vi takes Ctrl-C as a key: meishi is not killed, and quitting leaves the card as it was.
        let s = try Self.edit(mei, editor: "vi", [
            ["expect", "FIELD [LEVEL]: VALUE"],
            ["send", "\u{03}"],
            ["sleep", 0.3],
            ["send", ":q!\r"],
            ["expect", "no changes"],
        ])
        #expect(s.failedStep == nil && s.status == 0, "\(s.output.suffix(600))")
        #expect(Self.editFiles(mei).isEmpty)

        // An editor that Ctrl-C ends: meishi says so, exits 1 and removes its file.
        let killed = try Self.edit(mei, editor: "echo editing; sleep 30 #", [
            ["expect", "editing"],
            ["sleep", 0.3],
            ["send", "\u{03}"],
            ["expect", "was interrupted; your card is unchanged"],
        ])
        #expect(killed.failedStep == nil && killed.status == 1, "\(killed.output.suffix(600))")
        #expect(Self.editFiles(mei).isEmpty)
        #expect(try Self.title(mei) == nil)
    }

    /// SIGTERM or a hangup sent to meishi while vi is open is passed on to vi: meishi outlives it,
    /// says so and removes its file.
    @Test(.enabled(if: toolsPresent, "skipped: needs python3 and vi"), arguments: ["TERM", "HUP"])
    func terminationIsPassedOnToTheEditor(signal: String) throws {
        let mei = try CLI.withCard()
        let s = try Self.edit(mei, editor: "vi", [
            ["expect", "FIELD [LEVEL]: VALUE"],
            ["signal", signal],
            ["expect", "was interrupted; your card is unchanged"],
        ])
        #expect(s.failedStep == nil && s.status == 1, "\(s.output.suffix(600))")
        #expect(Self.editFiles(mei).isEmpty)
    }
}
