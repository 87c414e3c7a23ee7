import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Verify a signed card and store it as a 'signed' contact.",
        discussion: "A newer card from a known DID replaces the stored fields; an older one never does.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The payload file, or - for standard input.", valueName: "file"))
    var file: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run() throws {
        let ctx = try global.context()
        let data = try SecureFile.read(file, limit: ProximityPayload.maximumEncodedSize)
        let card = try CardService.checked(data, now: ctx.now)
        let outcome = try ctx.contacts.add(card, trust: .signed, source: file == "-" ? "stdin" : "file", now: ctx.now)
        let (verb, conflicts): (String, [Contact]) = switch outcome {
        case .added(_, let c): ("added", c)
        case .updated(_, let c): ("updated", c)
        case .unchanged: ("unchanged", [])
        }
        let c = outcome.contact
        for other in conflicts {
            Output.warn("\(Output.safe(c.name ?? c.did)) uses the same name or email as contact #\(other.id ?? 0) "
                        + "(\(other.did)) under a different key: possible impersonation")
        }
        if json {
            Output.json(.object(["result": .string(verb), "contact": Output.contactJSON(c)]))
            return
        }
        switch outcome {
        case .unchanged: print("unchanged: the stored card of \(Output.safe(c.name ?? c.did)) is as new or newer (#\(c.id ?? 0))")
        default: print("\(verb) \(Output.safe(c.name ?? "(no name)")) as #\(c.id ?? 0) (\(c.trust.rawValue)) \(c.did)")
        }
    }
}
