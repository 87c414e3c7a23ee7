import ArgumentParser
import MeishiCard
import MeishiKit

struct CardUnset: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "unset", abstract: "Remove a field, or one value of it.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The field to remove.", valueName: "field"))
    var field: String

    @Argument(help: ArgumentHelp("Remove only this value.", valueName: "value"))
    var value: String?

    func run(_ ctx: Context) throws {
        let name: FieldName
        do { name = try FieldName(field) } catch { throw MeishiError.card(error) }
        try editCard(global, ctx) { card throws(CardError) in
            let n = try card.unset(name, value: value)
            return "removed \(n) value\(n == 1 ? "" : "s") of \(name)"
        }
    }
}
