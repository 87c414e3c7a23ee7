import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsList: MeishiCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List contacts, sorted by name.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Only contacts with this trust.")
    var trust: Trust?

    @Option(help: ArgumentHelp("Only contacts whose name, org, DID, email or phone contains TEXT.", valueName: "text"))
    var search: String?

    @Option(help: "At most N contacts.")
    var limit: Int?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run(_ ctx: Context) throws {
        let store = try global.session(ctx).contacts.open()
        let found: [Contact]
        do { found = try store.list(ContactQuery(trust: trust, search: search, limit: limit)) } catch { throw MeishiError.store(error) }
        if json {
            ctx.out.json(.object(["contacts": .array(found.map(CardRendering.json))]))
            return
        }
        guard !found.isEmpty else {
            ctx.out.note(search == nil && trust == nil ? "no contacts yet" : "no contacts match")
            return
        }
        let rows = found.map { c in
            ["#\(c.id ?? 0)", cell(c.name ?? "-", 28), cell(c.org ?? "-", 20), c.trust.rawValue,
             String(CardRendering.date(c.lastSeen).prefix(10)), String(c.did.prefix(20)) + "…"]
        }
        let header = ["ID", "NAME", "ORG", "TRUST", "LAST SEEN", "DID"]
        let widths = (0..<header.count).map { i in ([header] + rows).map { $0[i].count }.max()! }
        for r in [header] + rows {
            ctx.out.line(zip(r, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
                .trimmingCharacters(in: .whitespaces))
        }
    }

    private func cell(_ s: String, _ width: Int) -> String {
        let safe = Console.safe(s)
        return safe.count > width ? String(safe.prefix(width - 1)) + "…" : safe
    }
}
