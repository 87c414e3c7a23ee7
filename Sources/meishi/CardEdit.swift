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
            at the top. Saving an empty file, or leaving a mistake unchanged, keeps the card as it was.

            Example:
              EDITOR=nano meishi card edit
            """)

    @OptionGroup var global: GlobalOptions

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let original = try session.cards.loadCard()
        let card = try EditLoop.edit(ctx, home: session.home, file: "card-edit.txt", text: CardEditText.text(of: original),
                                     wording: .card) { edited in
            do throws(CardEditText.LineError) {
                return .success(try CardEditText.card(from: edited))
            } catch {
                return .failure(EditLoop.Problem(line: error.line, message: MeishiFailure.editLine(error.reason)))
            }
        }
        guard card != original else {
            ctx.out.note("no changes")
            return
        }
        try session.cards.saveCard(card)
        ctx.out.line("saved your card (\(card.valueCount) value\(card.valueCount == 1 ? "" : "s"))")
    }
}

extension EditLoop.Wording {
    /// `card edit`'s words: "your card is unchanged".
    static let card = EditLoop.Wording(cancelled: .editCancelled, notSaved: MeishiFailure.editNotSaved,
                                       interrupted: MeishiFailure.editorInterrupted,
                                       failed: { MeishiFailure.editorFailed($0, status: $1) })
}
