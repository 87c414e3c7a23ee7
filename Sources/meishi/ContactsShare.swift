import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiQR
import MeishiStore

struct ContactsShare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Pass on a verified contact's signed card, signature intact.",
        discussion: """
            Writes the stored signed payload (canonical JSON), or with --qr its QR text form \
            (MEISHI1:…), shown as a QR code on a terminal. Whoever receives it checks the original \
            signature with 'meishi verify' or 'meishi scan', and stores it as 'signed', never 'met'. \
            Unsigned contacts have no signed card: use 'meishi contacts export'.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"))
    var ref: String

    @Flag(help: "The QR text form (a QR code when standard output is a terminal and no -o).")
    var qr = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output ('-' for standard output).", valueName: "file"))
    var output: String?

    func run() throws {
        let ctx = try global.context()
        let store = try ctx.contacts.open()
        let c: Contact
        do { c = try store.resolve(ref) } catch { throw MeishiFailure(error) }
        let payload = try ContactShare.payload(of: c, now: ctx.now)
        let bytes: [UInt8]
        if qr {
            let text = CardQRText.encode(payload)
            if output == nil, isatty(STDOUT_FILENO) == 1 {
                bytes = Array(QRRender.terminal(try QRService.matrix(text, mode: .alphanumeric, correction: .M), inverted: false).utf8)
            } else {
                bytes = Array(text.utf8) + [0x0A]
            }
        } else {
            bytes = payload.canonicalJSON + [0x0A]
        }
        try Output.write(bytes, to: output)
        Output.note("the signed card of \(Output.safe(c.name ?? c.did)) (signed \(Output.date(payload.timestamp))), signature intact"
                    + (output.map { $0 == "-" ? "" : ", written to \($0)" } ?? ""))
    }
}
