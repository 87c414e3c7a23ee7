import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiStore

struct ContactsSearch: SynchronousCommand {
    static let configuration = CommandConfiguration(commandName: "search",
        abstract: "List the contacts whose name, org, DID, email or phone contains TEXT.",
        discussion: """
            The same as 'meishi contacts list --search TEXT'. TEXT that looks like a phone number \
            (digits with +, spaces, -, ., / or parentheses) also matches by digits, in the phone's \
            international form too: "+819012345678" and "090-1234-5678" find +81 90 1234 5678.

            Examples:
              meishi contacts search example.org
              meishi contacts search tanaka --trust met --json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("What to look for.", valueName: "text"))
    var text: String

    @Option(help: "Only contacts with this trust.")
    var trust: Trust?

    // Unconditional: `--limit -1` is a value to refuse, not an option.
    @Option(parsing: .unconditional, help: "At most N contacts.")
    var limit: Int?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if text.allSatisfy(\.isWhitespace) { throw ValidationError("give the text to look for (every contact: meishi contacts list)") }
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run(_ ctx: Context) throws {
        try ContactsList.list(ctx, global: global, ContactQuery(trust: trust, search: text, limit: limit), json: json)
    }
}
