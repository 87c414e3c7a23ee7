import ArgumentParser
import MeishiCard
import MeishiKit

struct CardAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add a value to a multi-valued field (email, phone, url).")

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    func run() throws {
        let field = try arguments.fieldName()
        try editCard(global) { card throws(CardError) in
            try card.add(field, arguments.value, level: arguments.level)
            let v = card.fields[field]!.last!
            return "\(field) += \(Output.safe(v.value)) (\(v.level.rawValue))"
        }
    }
}
