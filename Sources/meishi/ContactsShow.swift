import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show one contact.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        let ctx = try global.context()
        let store = try ctx.contacts.open()
        let c: Contact
        do { c = try store.resolve(ref) } catch { throw MeishiFailure(error) }
        if json { Output.json(Output.contactJSON(c)) } else { printContact(c) }
    }
}
