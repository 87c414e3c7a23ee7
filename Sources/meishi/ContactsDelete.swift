import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsDelete: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete one contact.",
        discussion: """
            On a terminal meishi shows the contact and asks first; --yes skips the question (scripts \
            need no terminal).

            Examples:
              meishi contacts delete 3
              meishi contacts delete "Ken Sato" --yes
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Flag(name: .shortAndLong, help: "Delete without asking.")
    var yes = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let contacts = try global.session(ctx).contacts
        let found = try contacts.resolve(ref)
        if !yes, ctx.terminal.isInteractive,
           !ctx.terminal.confirm("delete \(CardRendering.name(found.name)) (#\(found.id ?? 0), \(found.trust.rawValue)) \(found.did)? [y/N] ") {
            throw MeishiFailure.notDeleted
        }
        let c = try contacts.delete(String(found.id ?? 0))
        if json {
            ctx.out.json(.object(["deleted": CardRendering.json(c)]))
        } else {
            ctx.out.line("deleted \(CardRendering.name(c.name)) (#\(c.id ?? 0)) \(c.did)")
        }
    }
}
