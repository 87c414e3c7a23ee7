import ArgumentParser
import MeishiCard
import MeishiKit

struct CardExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write your card as a signed ProximityPayload (JSON).",
        discussion: "The payload is canonical JSON (RFC 8785) followed by a newline. See docs/PROTOCOL.md.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "Share the values up to this level.")
    var level: DisclosureLevel = .professional

    @Option(help: ArgumentHelp("Share only these fields (comma-separated), e.g. name,email.", valueName: "fields"))
    var fields: FieldListArgument?

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-' for standard output).", valueName: "file"))
    var output: String?

    func run() throws {
        let ctx = try global.context()
        let card = try ctx.cards.loadCard()
        if let only = fields?.names {
            for f in only.sorted() where card.disclosed(at: level, only: [f]).isEmpty {
                Output.warn("your card has no \(f) shared at level \(level.rawValue)")
            }
        }
        let identity = try ctx.loadIdentity()
        let payload = try CardService.signedPayload(card: card, level: level, only: fields?.names, identity: identity, now: ctx.now)
        try Output.write(payload.canonicalJSON + [0x0A], to: output)
        if let output, output != "-" { Output.note("wrote signed card (\(level.rawValue)) to \(output)") }
    }
}
