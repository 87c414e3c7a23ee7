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
        try EditLoop.edit(ctx, home: session.home, file: "card-edit", text: CardEditText.text(of: original), wording: .card) { edited in
            do throws(CardEditText.LineError) {
                return .success(try CardEditText.card(from: edited))
            } catch {
                return .failure(EditLoop.Problem(line: error.line, message: MeishiFailure.editLine(error.reason)))
            }
        } save: { card, path in
            guard card != original else {
                ctx.out.note("no changes")
                return
            }
            // The edit applies to the card it started from: a change made meanwhile (`card set`
            // in another terminal) is not overwritten; the edited text stays for the next try.
            try session.home.exclusively {
                let current = try session.cards.loadCard()
                if current != original {
                    throw EditLoop.KeepFile(failure: MeishiFailure.cardChangedWhileEditing(Self.changedFields(original, current), kept: path))
                }
                if let (level, bytes) = CardService.shareNoLongerFitting(card, before: original, now: ctx.unixNow) {
                    var failure = MeishiFailure.shareWouldNotFit(level: level, bytes: bytes)
                    failure.message += "; the edited text is kept in \(Console.safe(path))"
                    throw EditLoop.KeepFile(failure: failure)
                }
                try session.cards.saveCard(card)
            }
            ctx.out.line("saved your card (\(card.valueCount) value\(card.valueCount == 1 ? "" : "s"))")
        }
    }

    /// The fields whose values differ between two cards, in display order.
    static func changedFields(_ a: Card, _ b: Card) -> [FieldName] {
        Set(a.fieldNames + b.fieldNames).sorted().filter { a.fields[$0] != b.fields[$0] }
    }
}

extension EditLoop.Wording {
    /// `card edit`'s words: "your card is unchanged".
    static let card = EditLoop.Wording(cancelled: .editCancelled, notSaved: MeishiFailure.editNotSaved,
                                       interrupted: MeishiFailure.editorInterrupted,
                                       failed: { MeishiFailure.editorFailed($0, status: $1) })
}
