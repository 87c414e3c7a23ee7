import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit

struct CardImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Fill your card from a vCard file (one card).",
        discussion: """
            Sets name, title, org, address and note, and adds the emails, phones and URLs your card does \
            not have yet. Each value gets --level, else on a terminal you are asked (Enter keeps the \
            field's default), else the field's default. Values the card rules refuse are reported and left \
            out; the rest is saved.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The vCard file, or - for standard input.", valueName: "file"))
    var file: String

    @Option(help: "Disclosure level of every imported value (default: asked on a terminal, else each field's default).")
    var level: DisclosureLevel?

    func run() throws {
        let ctx = try global.context()
        let bytes = try SecureFile.read(file, limit: CardImport.maximumFileBytes)
        guard bytes.count <= CardImport.maximumFileBytes else {
            throw MeishiFailure("\(file) is larger than \(CardImport.maximumFileBytes >> 20) MiB", status: .dataError)
        }
        let (contact, problems) = try CardImport.contact(in: bytes, file: file)
        for p in problems { Output.warn("\(file):\(p.line): \(p.description)") }
        var card = try ctx.cards.loadCard()
        let ask = level == nil && file != "-" && isatty(STDIN_FILENO) == 1 && Terminal.available
        let result = CardImport.apply(contact, to: &card) { field, value in
            if let level { return level }
            guard ask else { return field.defaultLevel }
            return Terminal.askLevel("\(field) \(Output.safe(value))", default: field.defaultLevel)
        }
        for r in result.refused {
            Output.warn("left out \(r.field) \"\(Output.safe(r.value))\": \(r.failure.message)")
        }
        guard !result.applied.isEmpty else {
            throw MeishiFailure("nothing to import: your card already holds every value of \(file)", status: .failure)
        }
        try ctx.cards.saveCard(card)
        for a in result.applied { print("\(a.field) = \(Output.safe(a.value)) (\(a.level.rawValue))") }
    }
}

extension Terminal {
    /// Asks for a disclosure level on /dev/tty; Enter or an unknown answer keeps `default`.
    static func askLevel(_ what: String, default level: DisclosureLevel) -> DisclosureLevel {
        guard let tty = fopen("/dev/tty", "r+") else { return level }
        defer { fclose(tty) }
        fputs("level for \(what)? public/professional/personal [\(level.rawValue)] ", tty)
        fflush(tty)
        var line = [CChar](repeating: 0, count: 64)
        guard fgets(&line, Int32(line.count), tty) != nil else { return level }
        let answer = String(cString: line).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        return DisclosureLevel.allCases.first { !answer.isEmpty && $0.rawValue.hasPrefix(answer) } ?? level
    }
}
