import ArgumentParser
import MeishiCard
import MeishiKit

struct CardExport: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write your card as a signed ProximityPayload (JSON).",
        discussion: """
            The payload is canonical JSON (RFC 8785) followed by a newline. See docs/PROTOCOL.md.

            Examples:
              meishi card export --fields name,org,email -o mei.json
              meishi card export --level public | meishi verify -
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Share the values up to this level (default: professional, or level in the configuration file).")
    var level: DisclosureLevel?

    @Option(help: ArgumentHelp("Share only these fields (comma-separated), e.g. name,email.", valueName: "fields"))
    var fields: FieldListArgument?

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-' for standard output).", valueName: "file"), completion: .file())
    var output: String?

    @Option(name: .customLong("mode"), help: FileModeArgument.help)
    var fileMode: FileModeArgument?

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let settings = try Settings.load(ctx)
        let level = self.level ?? settings.level ?? .professional, fields = self.fields ?? settings.fields
        let card = try session.cards.loadCard()
        let only = try fields?.names
        // Say what is missing before a passphrase is asked: the identity, then the name.
        _ = try session.identities.loadPublic()
        _ = try CardService.share(card, level: level, only: only)
        if let only {
            for f in only.sorted() where card.disclosed(at: level, only: [f]).isEmpty {
                ctx.out.warn("your card has no \(f) shared at level \(level.rawValue)")
            }
        }
        let identity = try session.loadIdentity()
        let signed = try CardService.sign(card, level: level, only: only, identity: identity, now: ctx.unixNow)
        try FileOutput.write(signed.bytes + [0x0A], to: output, mode: fileMode, ctx: ctx, home: session.home, text: true)
        if let output, output != "-" { ctx.out.note("wrote signed card (\(level.rawValue)) to \(output)") }
    }
}
