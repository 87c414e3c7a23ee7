import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiQR
import MeishiStore

struct ContactsShare: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Pass on a verified contact's signed card, signature intact.",
        discussion: """
            Writes the stored signed payload (canonical JSON), or with --qr its QR text form \
            (MEISHI1:…), shown as a QR code on a terminal. Whoever receives it checks the original \
            signature with 'meishi verify' or 'meishi scan', and stores it as 'signed', never 'met'. \
            Unsigned contacts have no signed card: use 'meishi contacts export'.

            Examples:
              meishi contacts share ken --qr
              meishi contacts share ken -o ken.json
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Flag(help: "The QR text form (a QR code when standard output is a terminal and no -o).")
    var qr = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-' for standard output).", valueName: "file"), completion: .file())
    var output: String?

    @Option(name: .customLong("mode"), help: FileModeArgument.help)
    var fileMode: FileModeArgument?

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let c = try session.contacts.resolve(ref)
        let payload = try ContactShare.card(of: c, now: ctx.unixNow).payload
        let bytes: [UInt8]
        if qr {
            let text = CardQRText.encode(payload)
            if output == nil, ctx.terminal.standardOutputIsTerminal {
                let matrix = try CardQR.matrix(text, mode: .alphanumeric, correction: .M)
                try CardQR.checkFits(matrix, output: output, ctx: ctx, file: "pass on the signed card as a file: -o card.json")
                bytes = Array(QRRender.terminal(matrix, colours: ctx.usesColour).utf8)
            } else {
                bytes = Array(text.utf8) + [0x0A]
            }
        } else {
            bytes = payload.canonicalJSON + [0x0A]
        }
        try FileOutput.write(bytes, to: output, mode: fileMode, ctx: ctx, home: session.home, text: true)
        ctx.out.note("the signed card of \(c.name ?? c.did) (signed \(CardRendering.date(payload.timestamp))), signature intact"
                     + (output.map { $0 == "-" ? "" : ", written to \($0)" } ?? ""))
    }
}
