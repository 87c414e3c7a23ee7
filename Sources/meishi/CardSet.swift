import ArgumentParser
import MeishiCard
import MeishiKit

struct CardSet: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set a field to one value, replacing what it held.",
        discussion: """
            Examples:
              meishi card set name "Mei Tanaka"
              meishi card set address "1-2-3 Shibuya" --level personal
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    func run(_ ctx: Context) throws {
        let field = try arguments.fieldName()
        try editCard(global, ctx) { card throws(CardError) in
            try card.set(field, arguments.value, level: arguments.level)
            let v = card.fields[field]![0]
            let next = field == .name && card.valueCount == 1 ? "\n" + MeishiFailure.nextAfterName(global.home) : ""
            let shown = CardRendering.multiline(v.value, indent: field.rawValue.count + 3)
            return "\(field) = \(shown) (\(v.level.rawValue))" + next
        }
    }
}
