import Foundation
import Testing

/// Questions and passphrase prompts answered on a real pseudo-terminal (tools/pty-session.py):
/// what Ctrl-D and a wrong answer do, and where the next message starts.
@Suite struct PromptTerminalTests {
    static func run(_ cli: CLI, _ args: [String], _ steps: [[Any]]) throws -> CardEditTerminalTests.Session {
        try CardEditTerminalTests.session(cli, args, steps)
    }

    /// Trial 7, F10: Ctrl-D at the backup's passphrase printed "the passphrase is empty" after the
    /// prompt on its line and exited 64 (a usage error); `contacts delete` said only "nothing
    /// deleted". Now Ctrl-D cancels the prompt: its own line, what was not done, exit 1.
    @Test(.enabled(if: CardEditTerminalTests.python != nil, "skipped: needs python3"))
    func ctrlDAtAPromptEndsItsLineAndDoesNothing() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let file = (mei.home as NSString).deletingLastPathComponent + "/home.backup"
        let backup = try Self.run(mei, ["backup", "-o", file], [["expect", "passphrase for the backup: "], ["send", "\u{4}"]])
        #expect(backup.failedStep == nil && backup.status == 1, "\(backup.output)")
        #expect(backup.output.contains("passphrase for the backup: \r\nmeishi: error: cancelled at the passphrase prompt (end of input): nothing was done"),
                "\(backup.output)")
        #expect(!FileManager.default.fileExists(atPath: file))

        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        #expect(try mei("contacts", "add", "-", stdin: Data(try ken("card", "export").stdout.utf8)).status == 0)
        let delete = try Self.run(mei, ["contacts", "delete", "1"], [["expect", "[y/N] "], ["send", "\u{4}"]])
        #expect(delete.failedStep == nil && delete.status == 1, "\(delete.output)")
        #expect(delete.output.contains("[y/N] \r\nmeishi: error: nothing deleted (no answer: end of input)"), "\(delete.output)")
        #expect(try mei("contacts", "list", "--json").stdout.contains("Ken Sato"))
    }

    /// Trial 7, F10: `card unset email` with two emails ended with a usage error (exit 64) on an
    /// answer that named no value; it asks again, and Ctrl-D leaves the card as it was.
    @Test(.enabled(if: CardEditTerminalTests.python != nil, "skipped: needs python3"))
    func aWrongChoiceIsAskedAgain() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        #expect(try mei("card", "add", "email", "work@example.org").status == 0)
        let cancelled = try Self.run(mei, ["card", "unset", "email"], [["expect", "Remove which? [1-2, or a for all] "], ["send", "\u{4}"]])
        #expect(cancelled.failedStep == nil && cancelled.status == 1, "\(cancelled.output)")
        #expect(cancelled.output.contains("[1-2, or a for all] \r\nmeishi: error: no value chosen (end of input): your card is unchanged"),
                "\(cancelled.output)")
        let unset = try Self.run(mei, ["card", "unset", "email"], [
            ["expect", "Remove which? [1-2, or a for all] "], ["send", "7\r"],
            ["expect", "answer 1 to 2, or a for all: "], ["send", "x\r"],
            ["expect", "answer 1 to 2, or a for all: "], ["send", "2\r"],
        ])
        #expect(unset.failedStep == nil && unset.status == 0, "\(unset.output)")
        #expect(unset.output.contains("removed 1 value of email"), "\(unset.output)")
        let shown = try mei("card", "show", "--json").stdout
        #expect(shown.contains("mei@example.org") && !shown.contains("work@example.org"), "\(shown)")
    }
}
