import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsShow: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one contact.",
        discussion: """
            Examples:
              meishi contacts show ken
              meishi contacts show 3 --json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let c = try global.session(ctx).contacts.resolve(ref)
        if json { ctx.out.json(CardRendering.json(c)) } else { ctx.out.line(CardRendering.contact(c)) }
    }
}
