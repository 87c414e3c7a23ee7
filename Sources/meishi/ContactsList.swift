import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore
import MeishiText

struct ContactsList: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List contacts, sorted by name.",
        discussion: """
            Examples:
              meishi contacts list
              meishi contacts list --trust met --search example
              meishi contacts list --event pycon
              meishi contacts list --tag investor
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only contacts with this trust.")
    var trust: Trust?

    @Option(help: ArgumentHelp("Only contacts whose name, org, DID, email or phone contains TEXT.", valueName: "text"))
    var search: String?

    @Option(help: ArgumentHelp("Only contacts met at an event whose name contains TEXT (ignoring case).", valueName: "text"))
    var event: String?

    @Option(help: ArgumentHelp("Only contacts with this tag of yours (ignoring case).", valueName: "tag"))
    var tag: String?

    // Unconditional: `--limit -1` is a value to refuse, not an option.
    @Option(parsing: .unconditional, help: "At most N contacts.")
    var limit: Int?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        // An empty --event matched every contact, met at an event or not.
        if let event, event.trimmingCharacters(in: .whitespaces).isEmpty { throw ValidationError("--event needs the text of an event's name") }
    }

    func run(_ ctx: Context) throws {
        try Self.list(ctx, global: global, ContactQuery(trust: trust, search: search, event: event, tag: tag, limit: limit), json: json)
    }

    /// Prints the contacts `query` finds: a table fitted to the terminal, or JSON (`contacts list`
    /// and `contacts search`).
    static func list(_ ctx: Context, global: GlobalOptions, _ query: ContactQuery, json: Bool) throws {
        let store = try global.session(ctx).contacts.open(readOnly: true)
        let (search, trust, event, tag) = (query.search, query.trust, query.event, query.tag)
        let found: [Contact]
        do { found = try store.list(query) } catch { throw MeishiError.store(error) }
        if json {
            ctx.out.json(.object(["contacts": .array(found.map(CardRendering.json))]))
            return
        }
        guard !found.isEmpty else {
            ctx.out.note(search == nil && trust == nil && event == nil && tag == nil ? "no contacts yet" : "no contacts match")
            return
        }
        // On a terminal long cells are cut to keep rows on one line; piped, every DID is whole.
        let cut = ctx.terminal.standardOutputIsTerminal
        let rows = found.map { c in
            ["#\(c.id ?? 0)", cell(c.name ?? "(no name)", 28, cut), cell(c.org ?? "-", 20, cut),
             c.trust.rawValue + (Self.isNewcomer(c) ? " !" : ""),
             String(CardRendering.date(c.lastSeen).prefix(10)), cut ? String(c.did.prefix(20)) + "…" : c.did]
        }
        var table = [["ID", "NAME", "ORG", "TRUST", "LAST SEEN", "DID"]] + rows
        // A narrow terminal drops columns (DID, then LAST SEEN, then ORG) rather than wrap rows.
        if cut, let width = ctx.terminal.width {
            for column in [5, 4, 2] where DisplayWidth.table(table).contains(where: { DisplayWidth.of($0) > width }) {
                table = table.map { var r = $0; r.remove(at: column); return r }
            }
            // Still too wide (a 40-column terminal): the names give way.
            table = DisplayWidth.fitting(table, width: width, shrinking: 1)
        }
        for line in DisplayWidth.table(table) { ctx.out.line(line) }
        if found.contains(where: Self.isNewcomer) {
            let legend = Self.flaggedLegend
            for line in cut ? DisplayWidth.wrapped(legend, to: ctx.terminal.width ?? .max) : [legend] { ctx.out.line(line) }
        }
    }

    /// Marked `!`: stored after another contact with the same name or email (the one that came
    /// first is not marked; `contacts show` of either names the other).
    static func isNewcomer(_ c: Contact) -> Bool { !c.earlierLookAlikes.isEmpty }

    private static func cell(_ s: String, _ width: Int, _ cut: Bool) -> String {
        cut ? DisplayWidth.truncated(Console.safe(s), to: width) : Console.safe(s)
    }
}

extension ContactsList {
    /// The line under a table that marks look-alikes with `!` (`contacts list`, `friends`).
    static let flaggedLegend = "! possible impersonation: came after another contact with the same name or email (see 'meishi contacts show ID')"
}
