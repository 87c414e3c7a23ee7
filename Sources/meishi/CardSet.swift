import ArgumentParser
import MeishiCard
import MeishiKit

struct CardSet: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Set a field to one value, replacing what it held.",
        discussion: """
            A field holding several values (emails, phones, URLs) needs to know which one to replace: \
            --replace names it; on a terminal meishi lists them and asks (or replaces all of them when \
            told a); elsewhere it refuses. 'meishi card add' adds a value, 'meishi card unset' removes one.

            Examples:
              meishi card set name "Mei Tanaka"
              meishi card set address "1-2-3 Shibuya" --level personal
              meishi card set email mei@new.example --replace mei@old.example
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var arguments: FieldValueArguments

    @Option(help: ArgumentHelp("Of a field's several values, the one to replace.", valueName: "value"))
    var replace: String?

    func run(_ ctx: Context) throws {
        let field = try arguments.fieldName()
        try editCard(global, ctx) { card in
            let held = (card.fields[field] ?? []).map(\.value)
            var old = replace
            if old == nil, held.count > 1 {
                old = try ctx.terminal.chooseValue(of: field, held, to: "Replace", refusal: .severalValuesToReplace(field, held))
            }
            guard let old else {
                try card.set(field, arguments.value, level: arguments.level)
                let v = card.fields[field]![0]
                let next = field == .name && card.valueCount == 1 ? "\n" + Self.nextAfterName(global.home) : ""
                let shown = CardRendering.multiline(v.value, indent: field.rawValue.count + 3)
                return "\(field) = \(shown) (\(v.level.rawValue))" + (held.count > 1 ? ", replacing all \(held.count) values" : "") + next
            }
            try card.replace(field, old, with: arguments.value, level: arguments.level)
            let v = card.fields[field]!.first { $0.value == arguments.value.precomposedStringWithCanonicalMapping } ?? card.fields[field]![0]
            return "\(field) = \(CardRendering.multiline(v.value, indent: field.rawValue.count + 3)) (\(v.level.rawValue)), "
                + "replacing \(Console.safe(old))"
        }
    }
}

extension CardSet {
    /// After the first `card set name`: what to do next.
    static func nextAfterName(_ home: String?) -> String {
        let m = Init.meishi(home)
        return """
            next: \(m) card add email you@example.org   (then: \(m) card show)
            then: \(m) exchange with someone nearby, or \(m) card qr to show your card
            """
    }
}
