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
        /// The terminal's modes once meishi ended (see tools/pty-session.py).
        let modes: [String: Bool]
    }

    /// Runs `meishi card edit` in `cli`'s home on a new terminal with EDITOR `editor`, playing `steps`.
    static func edit(_ cli: CLI, editor: String, _ steps: [[Any]]) throws -> Session {
        let scratch = (cli.home as NSString).deletingLastPathComponent
        // HOME: no one's vimrc or viminfo.
        return try session(cli, ["card", "edit"], environment: ["HOME": scratch, "EDITOR": editor, "VISUAL": nil], steps)
    }

    /// Runs `meishi ARGS` in `cli`'s home on a new terminal (TERM xterm, no MEISHI_PASSPHRASE),
    /// `environment` changed so, playing `steps`.
    static func session(_ cli: CLI, _ args: [String], environment: [String: String?] = [:], _ steps: [[Any]]) throws -> Session {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python!)
        let stepsJSON = String(decoding: try JSONSerialization.data(withJSONObject: steps), as: UTF8.self)
        p.arguments = [Fixtures.root.appendingPathComponent("tools/pty-session.py").path, stepsJSON, CLI.binary] + args
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = cli.home
        env["TERM"] = "xterm"
        env["MEISHI_PASSPHRASE"] = nil
        env["MEISHI_NEW_PASSPHRASE"] = nil
        for (name, value) in environment { env[name] = value }
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return Session(status: doc["status"] as? Int, failedStep: doc["failedStep"] as? Int, output: doc["output"] as? String ?? "",
                       modes: doc["modes"] as? [String: Bool] ?? [:])
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
        // vi ended by the signal left the terminal raw (`-onlcr -isig -icanon -echo -icrnl`):
        // meishi puts back the modes it found.
        #expect(s.modes == ["echo": true, "icanon": true, "isig": true, "onlcr": true, "icrnl": true], "\(s.modes)")
    }
}

extension CardEditTerminalTests {
    /// Ctrl-Z, then `kill %1` (SIGTERM, then SIGCONT, to the stopped job): vi ends, meishi says so
    /// and the terminal has its modes back.
    @Test(.enabled(if: toolsPresent, "skipped: needs python3 and vi"))
    func terminationWhileSuspendedEndsTheEditor() throws {
        let mei = try CLI.withCard()
        let s = try Self.edit(mei, editor: "vi", [
            ["expect", "FIELD [LEVEL]: VALUE"],
            ["send", "\u{1A}"],
            ["stopped", 0],
            ["signal", "TERM"],
            ["continue", 0],
            ["expect", "was interrupted; your card is unchanged"],
        ])
        #expect(s.failedStep == nil && s.status == 1, "\(s.output.suffix(600))")
        #expect(Self.editFiles(mei).isEmpty)
        #expect(s.modes == ["echo": true, "icanon": true, "isig": true, "onlcr": true, "icrnl": true], "\(s.modes)")
    }
}

/// `card edit` told to stop without a terminal: the editor's whole process group goes with it.
@Suite struct CardEditSignalTests {
    /// A shell script as EDITOR whose `sleep 30` kept running, re-parented to PID 1, after SIGTERM
    /// ended meishi (and the script's shell).
    @Test func theEditorsChildrenDoNotOutliveMeishi() throws {
        let mei = try CLI.withCard()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let script = dir + "/slow-editor"
        try "#!/bin/sh\nsleep 60 &\necho $! > \(dir)/sleep.pid\nwait\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let editing = try ConcurrentUseTests.start(mei, ["card", "edit"], environment: ["EDITOR": script, "VISUAL": ""])
        try ConcurrentUseTests.waitFor(dir + "/sleep.pid")
        usleep(100_000)
        let sleeper = try #require(pid_t(try String(contentsOfFile: dir + "/sleep.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        editing.0.terminate()
        // A guard against a hang, not a speed target: the old meishi waited for the sleep to end.
        for _ in 0..<200 where editing.0.isRunning { usleep(50_000) }
        #expect(!editing.0.isRunning, "meishi still waits for the editor's child 10 s after SIGTERM")
        if editing.0.isRunning { kill(sleeper, SIGKILL) }
        let log = String(decoding: editing.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        editing.0.waitUntilExit()
        #expect(editing.0.terminationStatus == 1 && log.contains("was interrupted"), "\(log)")
        var alive = true
        for _ in 0..<40 {
            let state = (try? String(contentsOfFile: "/proc/\(sleeper)/stat", encoding: .utf8))?.split(separator: ")").last?
                .split(separator: " ").first
            alive = state != nil && state != "Z"
            if !alive { break }
            usleep(50_000)
        }
        if alive { kill(sleeper, SIGKILL) }
        #expect(!alive, "the editor's child \(sleeper) still runs after meishi ended")
        #expect(CardEditTerminalTests.editFiles(mei).isEmpty)
    }
}
