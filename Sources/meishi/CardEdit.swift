import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct CardEdit: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit",
        abstract: "Edit your card in $VISUAL or $EDITOR.",
        discussion: """
            Opens your card as text, one value per line (FIELD [LEVEL]: VALUE). On save the card is \
            checked like 'card set' and 'card add'; on a mistake the editor opens again with the error \
            at the top. Saving an empty file, or leaving a mistake unchanged, keeps the card as it was. \
            If another command changed the card while the editor was open, nothing is saved: meishi \
            says which fields changed, keeps your text in its file (card-edit-XXXXXX.txt in the \
            home) and exits 75.

            Example:
              EDITOR=nano meishi card edit
            """)

    @OptionGroup var global: GlobalOptions

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let original = try session.cards.loadCard()
        let editor = ["VISUAL", "EDITOR"].lazy.compactMap { ctx.environment[$0] }.first { !$0.isEmpty } ?? "vi"
        let path = try Self.temporaryFile(in: session.home)
        // Removed on every way out but one: an edit refused because the card changed meanwhile.
        var keep = false
        defer { if !keep { unlink(path) } }
        var text = CardEditText.text(of: original)
        // The last text that failed: saving it again unchanged ends the loop (as a script would).
        var lastFailed: String?
        while true {
            try SecureFile.write(Array(text.utf8), to: path)
            try Self.runEditor(editor, path, ctx)
            let edited = String(decoding: try SecureFile.read(path, limit: 1 << 20), as: UTF8.self)
            if CardEditText.isEmpty(edited) { throw MeishiFailure.editCancelled }
            let card: Card
            do throws(CardEditText.LineError) {
                card = try CardEditText.card(from: edited)
            } catch {
                let message = "line \(error.line): " + MeishiFailure.editLine(error.reason)
                let attempt = Self.withoutErrorLines(edited)
                if attempt == lastFailed { throw MeishiFailure.editNotSaved(message) }
                ctx.out.warn(message)
                lastFailed = attempt
                text = "# error: \(message)\n" + attempt
                continue
            }
            guard card != original else {
                ctx.out.note("no changes")
                return
            }
            // The edit applies to the card it started from: a change made meanwhile (`card set`
            // in another terminal) is not overwritten; the edited text stays for the next try.
            try session.home.exclusively {
                let current = try session.cards.loadCard()
                if current != original {
                    keep = true
                    try SecureFile.write(Array(edited.utf8), to: path)
                    throw MeishiFailure.cardChangedWhileEditing(Self.changedFields(original, current), kept: path)
                }
                try session.cards.saveCard(card)
            }
            ctx.out.line("saved your card (\(card.valueCount) value\(card.valueCount == 1 ? "" : "s"))")
            return
        }
    }

    /// A new file `card-edit-XXXXXX.txt` in the home, mode 0600, its name unique to this run (two
    /// sessions shared one file: vi warned of its swap file and one save was lost).
    static func temporaryFile(in home: Home) throws -> String {
        try home.ensureExists()
        var template = Array((home.path + "/card-edit-XXXXXX.txt").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, 4) }
        guard fd >= 0 else { throw MeishiError.cannotWrite(path: home.path + "/card-edit-XXXXXX.txt", reason: String(cString: strerror(errno))) }
        close(fd)
        return String(cString: template)
    }

    /// The fields whose values differ between two cards, in display order.
    static func changedFields(_ a: Card, _ b: Card) -> [FieldName] {
        Set(a.fieldNames + b.fieldNames).sorted().filter { a.fields[$0] != b.fields[$0] }
    }

    static func withoutErrorLines(_ text: String) -> String {
        text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).drop { $0.hasPrefix("# error:") }.joined(separator: "\n")
    }

    /// Runs the editor on `path` through the context; a failure leaves the card unchanged.
    static func runEditor(_ editor: String, _ path: String, _ ctx: Context) throws {
        let status: Int32
        do { status = try ctx.runEditor(editor, path, ctx.environment) } catch {
            throw MeishiFailure.cannotStartEditor(editor, error.localizedDescription)
        }
        if [SIGINT, SIGQUIT, SIGTERM, SIGHUP].contains(status - 128) { throw MeishiFailure.editorInterrupted(editor) }
        guard status == 0 else { throw MeishiFailure.editorFailed(editor, status: status) }
    }
}
