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
        try editCard(global, ctx) { card throws(CardError) in
            var value = value
            if value == nil, let held = card.fields[name], held.count > 1 {
                value = try Self.choose(name, held.map(\.value), ctx.terminal)
            }
            let n = try card.unset(name, value: value)
            return "removed \(n) value\(n == 1 ? "" : "s") of \(name)"
        }
    }

    /// Which of several values to remove: asked on a terminal, else refused with the values.
    static func choose(_ field: FieldName, _ values: [String], _ terminal: TerminalIO) throws(CardError) -> String? {
        guard terminal.isInteractive else { throw .severalValues(field, values) }
        var question = "your card has \(values.count) \(field) values:\n"
        for (n, v) in values.enumerated() { question += "  \(n + 1)) \(Console.safe(v))\n" }
        question += "Remove which? [1-\(values.count), or a for all] "
        let answer = terminal.ask(question, timeout: nil)?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        if answer == "a" || answer == "all" { return nil }
        guard let n = Int(answer), (1...values.count).contains(n) else { throw .severalValues(field, values) }
        return values[n - 1]
    }
}
