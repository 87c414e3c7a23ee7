import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct CardEdit: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit your card in $VISUAL or $EDITOR.",
        discussion: """
            Opens your card as text, one value per line (FIELD [LEVEL]: VALUE). On save the card is \
            checked like 'card set' and 'card add'; on a mistake the editor opens again with the error \
            at the top. Saving an empty file, or leaving a mistake unchanged, keeps the card as it was.
            """)

    @OptionGroup var global: GlobalOptions

    func run() throws {
        let ctx = try global.context()
        let original = try ctx.cards.loadCard()
        let editor = ctx.environment["VISUAL"].flatMap { $0.isEmpty ? nil : $0 } ?? ctx.environment["EDITOR"].flatMap { $0.isEmpty ? nil : $0 } ?? "vi"
        try ctx.home.ensureExists()
        let path = ctx.home.path + "/card-edit.txt"
        defer { unlink(path) }
        var text = CardEditText.text(of: original)
        // The last text that failed: saving it again unchanged ends the loop (as a script would).
        var lastFailed: String?
        while true {
            try SecureFile.write(Array(text.utf8), to: path)
            try Self.runEditor(editor, path)
            let edited = String(decoding: try SecureFile.read(path, limit: 1 << 20), as: UTF8.self)
            if CardEditText.isEmpty(edited) {
                throw MeishiFailure("card edit cancelled: the file was empty; your card is unchanged", status: .failure)
            }
            let card: Card
            do {
                card = try CardEditText.card(from: edited)
            } catch {
                let message = "line \(error.line): " + Self.describe(error.reason)
                let attempt = Self.withoutErrorLines(edited)
                if attempt == lastFailed {
                    throw MeishiFailure("card not saved: \(message)", hint: "run 'meishi card edit' again and fix that line",
                                        status: .dataError)
                }
                Output.warn(message)
                lastFailed = attempt
                text = "# error: \(message)\n" + attempt
                continue
            }
            guard card != original else {
                Output.note("no changes")
                return
            }
            try ctx.cards.saveCard(card)
            print("saved your card (\(card.valueCount) value\(card.valueCount == 1 ? "" : "s"))")
            return
        }
    }

    static func withoutErrorLines(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).drop { $0.hasPrefix("# error:") }.joined(separator: "\n")
    }

    static func describe(_ reason: CardEditText.LineError.Reason) -> String {
        switch reason {
        case .malformed: return "expected FIELD [LEVEL]: VALUE"
        case .unknownLevel(let l): return "unknown level \"\(Output.safe(l))\" (public, professional or personal)"
        case .refused(let e):
            let f = MeishiFailure(e)
            return f.message + (f.hint.map { " (\($0))" } ?? "")
        }
    }

    /// Runs the editor command through the shell, as git does, on the terminal.
    static func runEditor(_ editor: String, _ path: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", editor + " \"$1\"", editor, path]
        do { try p.run() } catch {
            throw MeishiFailure("cannot start the editor \(editor): \(error.localizedDescription)", hint: "set EDITOR", status: .unavailable)
        }
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw MeishiFailure("the editor \(editor) failed (exit \(p.terminationStatus)); your card is unchanged", status: .failure)
        }
    }
}
