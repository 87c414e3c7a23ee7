import ArgumentParser
import MeishiCard
import MeishiKit

struct CardAdd: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a value to a multi-valued field (email, phone, url).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    func run(_ ctx: Context) throws {
        let field = try arguments.fieldName()
        try editCard(global, ctx) { card throws(CardError) in
            try card.add(field, arguments.value, level: arguments.level)
            let v = card.fields[field]!.last!
            return "\(field) += \(Console.safe(v.value)) (\(v.level.rawValue))"
        }
    }
}
