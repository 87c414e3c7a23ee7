import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct CardImportCommand: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Fill your card from a vCard file (one card).",
        discussion: """
            Sets name, title, org, address and note, and adds the emails, phones and URLs your card does \
            not have yet. Each value gets --level, else on a terminal you are asked (Enter keeps the \
            field's default), else the field's default. Values the card rules refuse are reported and left \
            out; the rest is saved.

            Example:
              meishi card import me.vcf --level professional
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The vCard file, or - for standard input.", valueName: "file"), completion: .file())
    var file: String

    @Option(help: "Disclosure level of every imported value (default: asked on a terminal, else each field's default).")
    var level: DisclosureLevel?

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let (contact, problems) = try CardImport.contact(in: try ctx.read(file, limit: CardImport.maximumFileBytes), file: file)
        for p in problems { ctx.out.warn(MeishiFailure(MeishiError.vcard(path: file, p)).message) }
        // Under the home's lock: a `card set` run meanwhile is not undone by this save.
        let result = try session.home.exclusively {
            var card = try session.cards.loadCard()
            let ask = level == nil && file != "-" && ctx.terminal.isInteractive
            let result = CardImport.apply(contact, to: &card) { field, value in
                if let level { return level }
                guard ask else { return field.defaultLevel }
                return ctx.terminal.askLevel("\(field) \(Console.safe(value))", default: field.defaultLevel)
            }
            for r in result.refused {
                ctx.out.warn("left out \(r.field) \"\(r.value)\": \(MeishiFailure(r.error).message)")
            }
            guard !result.applied.isEmpty else { throw MeishiError.nothingToImport(path: file) }
            try session.cards.saveCard(card)
            return result
        }
        for a in result.applied { ctx.out.line("\(a.field) = \(Console.safe(a.value)) (\(a.level.rawValue))") }
    }
}

extension TerminalIO {
    /// Asks for a disclosure level; Enter, no answer or an unknown answer keeps `default`.
    func askLevel(_ what: String, default level: DisclosureLevel) -> DisclosureLevel {
        guard let reply = ask("level for \(what)? public/professional/personal [\(level.rawValue)] ", timeout: nil) else { return level }
        let answer = reply.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return DisclosureLevel.allCases.first { !answer.isEmpty && $0.rawValue.hasPrefix(answer) } ?? level
    }
}
