import ArgumentParser
import MeishiCard
import MeishiKit

struct CardUnset: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "unset", abstract: "Remove a field, or one value of it.",
        discussion: """
            A field with several values (emails, phones, URLs) needs the value to remove: on a \
            terminal meishi lists them and asks which; elsewhere name it.

            Examples:
              meishi card unset address
              meishi card unset email old@example.org
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The field to remove.", valueName: "field"), completion: .list(FieldName.standard))
    var field: String

    @Argument(help: ArgumentHelp("Remove only this value.", valueName: "value"))
    var value: String?

    func run(_ ctx: Context) throws {
        let name: FieldName
        do { name = try FieldName(field) } catch { throw MeishiError.card(error) }
        try editCard(global, ctx) { card in
            var value = value
            if value == nil, let held = card.fields[name], held.count > 1 {
                value = try ctx.terminal.chooseValue(of: name, held.map(\.value), to: "Remove", refusal: .severalValues(name, held.map(\.value)))
            }
            let n = try card.unset(name, value: value)
            return "removed \(n) value\(n == 1 ? "" : "s") of \(name)"
        }
    }
}
