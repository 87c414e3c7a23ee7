import ArgumentParser
import MeishiKeyring

struct Lock: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock",
        abstract: "Forget the keys --remember kept in this session's keyring.",
        discussion: """
            Removes every key meishi kept in the kernel's session keyring (see --remember): the next \
            command that needs the identity asks for the passphrase again. Logging out, or the time \
            given to --remember passing, does the same.

            Examples:
              meishi card export --remember 15m -o card.json && meishi lock
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let removed = SessionKeyring.removeAll()
        if json {
            ctx.out.json(.object(["forgotten": .number(Double(removed))]))
        } else {
            ctx.out.line(removed == 0 ? "nothing was remembered" : "forgot \(removed) remembered key\(removed == 1 ? "" : "s")")
        }
    }
}
