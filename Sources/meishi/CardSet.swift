import ArgumentParser
import MeishiCard
import MeishiKit

struct CardSet: MeishiCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set a field to one value, replacing what it held.")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    func run(_ ctx: Context) throws {
        let field = try arguments.fieldName()
        try editCard(global, ctx) { card throws(CardError) in
            try card.set(field, arguments.value, level: arguments.level)
            let v = card.fields[field]![0]
            return "\(field) = \(Console.safe(v.value)) (\(v.level.rawValue))"
        }
    }
}
