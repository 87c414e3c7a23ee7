import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiText

struct CardShow: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show your card, or what a share at a level discloses.",
        discussion: """
            Examples:
              meishi card show
              meishi card show --level public
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Show only what a share at this level discloses.")
    var level: DisclosureLevel?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let card = try global.session(ctx).cards.loadCard()
        var rows: [(field: FieldName, value: CardValue)] = []
        for f in card.fieldNames {
            for v in card.fields[f]! where level.map({ v.level <= $0 }) ?? true { rows.append((f, v)) }
        }
        if json {
            var fields: [String: JSONValue] = [:]
            for r in rows {
                var obj: [String: JSONValue] = ["value": .string(r.value.value), "level": .string(r.value.level.rawValue)]
                if let e = r.value.e164 { obj["e164"] = .string(e) }
                if case .array(let a)? = fields[r.field.rawValue] {
                    fields[r.field.rawValue] = .array(a + [.object(obj)])
                } else {
                    fields[r.field.rawValue] = .array([.object(obj)])
                }
            }
            var doc: [String: JSONValue] = ["fields": .object(fields)]
            if let level { doc["level"] = .string(level.rawValue) }
            ctx.out.json(.object(doc))
            return
        }
        if rows.isEmpty {
            ctx.out.note(card.valueCount == 0 ? "your card is empty; try: meishi card set name \"Your Name\""
                                               : "nothing on your card is shared at level \(level!.rawValue)")
            return
        }
        // Field, value, level tag and E.164 form in columns; a value of several lines (an
        // address) continues indented under its first line.
        var table: [[String]] = []
        for r in rows {
            let lines = r.value.value.split(separator: "\n", omittingEmptySubsequences: false).map { Console.safe(String($0)) }
            var row = [r.field.rawValue, lines[0], "[\(r.value.level.rawValue)]"]
            if let e = r.value.e164, e != r.value.value { row.append("(\(e))") }
            table.append(row)
            for more in lines.dropFirst() { table.append(["", more]) }
        }
        // A narrow terminal: the E.164 forms go first, then values are cut so the levels stay in view.
        if ctx.terminal.standardOutputIsTerminal, let width = ctx.terminal.width,
           DisplayWidth.table(table).contains(where: { DisplayWidth.of($0) + 2 > width }) {
            table = table.map { Array($0.prefix(3)) }
            let fieldWidth = table.map { DisplayWidth.of($0[0]) }.max() ?? 0
            let levelWidth = table.map { $0.count > 2 ? DisplayWidth.of($0[2]) : 0 }.max() ?? 0
            let room = max(8, width - 2 - fieldWidth - 2 - 2 - levelWidth)
            table = table.map { row in var r = row; r[1] = DisplayWidth.truncated(r[1], to: room); return r }
        }
        for line in DisplayWidth.table(table) { ctx.out.line("  " + line) }
    }
}
