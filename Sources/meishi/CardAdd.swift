import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct CardAdd: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a value to a multi-valued field (email, phone, url).",
        discussion: """
            Examples:
              meishi card add email mei@example.org
              meishi card add email mei@example.org --level personal   # change its level
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    func run(_ ctx: Context) throws {
        let field = try arguments.fieldName()
        try editCard(global, ctx) { card throws(CardError) in
            // The same value with another --level changes the value's level.
            let value = arguments.value.precomposedStringWithCanonicalMapping
            if let level = arguments.level, let held = card.fields[field]?.first(where: { $0.value == value }), held.level != level {
                let old = try card.relevel(field, value, to: level)
                return "\(field) \(Console.safe(value)): level \(old.rawValue) -> \(level.rawValue)"
            }
            try card.add(field, arguments.value, level: arguments.level)
            let v = card.fields[field]!.last!
            return "\(field) += \(Console.safe(v.value)) (\(v.level.rawValue))"
        }
    }
}
