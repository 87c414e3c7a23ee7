import ArgumentParser
import MeishiCard
import MeishiKit

struct CardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "card",
        abstract: "Edit, show and export your own card.",
        discussion: """
            Fields: name, title, org, email, phone, url, address, note and custom x-<word>. email, phone \
            and url hold several values. Every value has a disclosure level, public < professional < \
            personal; a share at level L includes the values at levels up to L. Without --level a value \
            gets its field's default: public for name, title, org and url; professional for email and \
            phone; personal for address, note and x- fields.

            Examples:
              meishi card set name "Mei Tanaka"
              meishi card show
            """,
        subcommands: [CardSet.self, CardAdd.self, CardUnset.self, CardShow.self, CardExport.self, CardQR.self,
                      CardImportCommand.self, CardEdit.self, CardPushCommand.self])
}

/// The field, value and level arguments of `card set` and `card add`.
struct FieldValueArguments: ParsableArguments {
    @Argument(help: ArgumentHelp("The field: name, title, org, email, phone, url, address, note or x-<word>.", valueName: "field"),
              completion: .list(FieldName.standard))
    var field: String

    @Argument(help: ArgumentHelp("The value (UTF-8, at most 256 bytes).", valueName: "value"))
    var value: String

    @Option(help: "Disclosure level of the value (default: the field's default level).")
    var level: DisclosureLevel?

    func fieldName() throws(MeishiError) -> FieldName {
        do { return try FieldName(field) } catch { throw .card(error) }
    }
}

/// Loads the card, applies `edit`, saves it, and says what changed; under the home's lock, so
/// that commands run at the same time apply their changes one after the other.
func editCard(_ global: GlobalOptions, _ ctx: Context, _ edit: (inout Card) throws -> String) throws {
    let session = try global.session(ctx)
    let message = try session.home.exclusively {
        var card = try session.cards.loadCard()
        let message: String
        let before = card
        do { message = try edit(&card) } catch let error as CardError { throw MeishiError.card(error) }
        try refuseShareTooLarge(card, before: before, ctx)
        try session.cards.saveCard(card)
        return message
    }
    ctx.out.line(message)
}

/// Trial 7, F12: a value that makes a share too big to sign was accepted, and `exchange` found
/// out after the code had matched. The edit is refused instead, nothing changed (exit 65).
func refuseShareTooLarge(_ card: Card, before: Card, _ ctx: Context) throws {
    if let (level, bytes) = CardService.shareNoLongerFitting(card, before: before, now: ctx.unixNow) {
        throw MeishiFailure.shareWouldNotFit(level: level, bytes: bytes)
    }
}

extension TerminalIO {
    /// Which of a field's several values a command is to act on (`verb`: "Remove", "Replace"):
    /// asked on a terminal, nil for all of them. An answer naming none is asked again (it ended
    /// the command with a usage error, trial 7 F10), `refusal` after three; no terminal:
    /// `refusal`; Ctrl-D: nothing changed (exit 1).
    func chooseValue(of field: FieldName, _ values: [String], to verb: String, refusal: CardError) throws -> String? {
        guard isInteractive else { throw refusal }
        var question = "your card has \(values.count) \(field) values:\n"
        for (n, v) in values.enumerated() { question += "  \(n + 1)) \(Console.safe(v))\n" }
        question += "\(verb) which? [1-\(values.count), or a for all] "
        for _ in 1...3 {
            guard let reply = ask(question, timeout: nil) else { throw MeishiFailure.noValueChosen }
            let answer = reply.trimmingCharacters(in: .whitespaces).lowercased()
            if answer == "a" || answer == "all" { return nil }
            if let n = Int(answer), (1...values.count).contains(n) { return values[n - 1] }
            question = "answer 1 to \(values.count), or a for all: "
        }
        throw refusal
    }
}
