import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsDelete: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete contacts.",
        discussion: """
            On a terminal meishi shows the contacts and asks first; --yes skips the question (scripts \
            need no terminal). Several REFs are deleted together or not at all: one that names no \
            contact, or several, deletes nothing. --json prints {"deleted": CONTACT} for one REF and \
            {"deleted": [CONTACT, ...]} for several.

            Examples:
              meishi contacts delete 3
              meishi contacts delete 2 5 "Ken Sato" --yes
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var refs: [String]

    @Flag(name: .shortAndLong, help: "Delete without asking.")
    var yes = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if refs.isEmpty { throw ValidationError("name the contact to delete (meishi contacts list shows them)") }
    }

    func run(_ ctx: Context) throws {
        let contacts = try global.session(ctx).contacts
        // Every REF is resolved before anything is asked or deleted.
        var found: [Contact] = []
        for ref in refs {
            let c = try contacts.resolve(ref)
            if !found.contains(where: { $0.id == c.id }) { found.append(c) }
        }
        if !yes, ctx.terminal.isInteractive {
            let question = found.count == 1
                ? "delete \(Self.describe(found[0]))? [y/N] "
                : "delete these \(found.count) contacts?\n" + found.map { "  " + Self.describe($0) + "\n" }.joined() + "[y/N] "
            switch ctx.terminal.reply(question, timeout: nil) {
            case .line(let a) where ["y", "yes"].contains(a.trimmingCharacters(in: .whitespaces).lowercased()): break
            case .line: throw MeishiFailure.notDeleted
            case .ended, .timedOut: throw MeishiFailure.notDeletedUnanswered
            }
        }
        let deleted = try contacts.delete(found.map { String($0.id ?? 0) })
        if json {
            ctx.out.json(.object(["deleted": refs.count == 1 ? CardRendering.json(deleted[0]) : .array(deleted.map(CardRendering.json))]))
        } else {
            for c in deleted { ctx.out.line("deleted \(CardRendering.name(c.name)) (#\(c.id ?? 0)) \(c.did)") }
        }
    }

    private static func describe(_ c: Contact) -> String {
        "\(CardRendering.name(c.name)) (#\(c.id ?? 0), \(c.trust.rawValue)) \(c.did)"
    }
}
