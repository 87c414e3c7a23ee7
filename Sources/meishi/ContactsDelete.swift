import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsDelete: MeishiCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete one contact.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let c = try global.session(ctx).contacts.delete(ref)
        if json {
            ctx.out.json(.object(["deleted": CardRendering.json(c)]))
        } else {
            ctx.out.line("deleted \(CardRendering.name(c.name)) (#\(c.id ?? 0)) \(c.did)")
        }
    }
}
