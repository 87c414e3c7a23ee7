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
        if json {
            Output.warnConflicts(outcome)
            Output.json(.object(["result": .string(outcome.name), "contact": Output.contactJSON(outcome.contact)]))
        } else {
            Output.reportStored(outcome)
        }
    }
}
