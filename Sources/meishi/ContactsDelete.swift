import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsDelete: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete one contact.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"))
    var ref: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        let ctx = try global.context()
        let store = try ctx.contacts.open()
        let c: Contact
        do { c = try store.delete(ref) } catch { throw MeishiFailure(error) }
        if json {
            Output.json(.object(["deleted": Output.contactJSON(c)]))
        } else {
            print("deleted \(Output.safe(c.name ?? "(no name)")) (#\(c.id ?? 0)) \(c.did)")
        }
    }
}
