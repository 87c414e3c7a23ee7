import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiQR

enum QRFormat: String, ExpressibleByArgument, CaseIterable {
    case terminal, png, svg, text
}

extension QRErrorCorrection: ExpressibleByArgument {
    /// `l`, `m`, `q`, `h` as well as upper case.
    public init?(argument: String) { self.init(rawValue: argument.uppercased()) }
}

struct CardQR: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "qr",
        abstract: "Show your signed card as a QR code (terminal, PNG, SVG or its text).",
        discussion: """
            The QR holds the signed card in its compact text form (MEISHI1: + Base45, see \
            docs/PROTOCOL.md), which 'meishi scan' and 'meishi verify' check. With --vcard it holds an \
            unsigned vCard 4.0 that any phone camera imports; meishi stores such scans as 'unsigned'. \
            With --solidarity it holds a card the Solidarity app verifies and imports: a compact JWS \
            (ES256) signed by a P-256 key the identity gains on first use (kept in solidarity.key, \
            protected like identity.key), naming your meishi DID in sameAs. \
            The format follows -o's extension (.png, .svg, .txt), else it is terminal.

            Examples:
              meishi card qr
              meishi card qr --level public -o card.png
            """)

    @OptionGroup var global: GlobalOptions

    @Option(help: "Share the values up to this level (default: professional, or level in the configuration file).")
    var level: DisclosureLevel?

    @Option(help: ArgumentHelp("Share only these fields (comma-separated).", valueName: "fields"))
    var fields: FieldListArgument?

    @Option(help: "Output format (default: from -o's extension, else terminal).")
    var format: QRFormat?

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE ('-' for standard output).", valueName: "file"), completion: .file())
    var output: String?

    @Option(name: .customLong("mode"), help: FileModeArgument.help)
    var fileMode: FileModeArgument?

    @Option(help: "Error correction level: L, M, Q or H (default M; L with --solidarity).")
    var ecc: QRErrorCorrection?

    @Option(help: "Pixels (PNG) or units (SVG) per module.")
    var scale: Int = 8

    @Flag(help: "Encode an unsigned vCard 4.0 instead of the signed card.")
    var vcard = false

    @Flag(help: "Encode a card for the Solidarity app (ES256 JWS) instead of the meishi card.")
    var solidarity = false

    @Flag(help: ArgumentHelp("Terminal: draw for light text on a dark background.", discussion:
        "Matters for plain output (NO_COLOR, or not a terminal), where the blocks take the text colour; with colours the code is drawn light on dark."))
    var invert = false

    func validate() throws {
        guard (1...64).contains(scale) else { throw ValidationError("--scale must be between 1 and 64") }
        guard !(vcard && solidarity) else { throw ValidationError("choose one of --vcard and --solidarity") }
    }

    /// --format, else -o's extension (an unknown one is refused), else terminal.
    func resolvedFormat() throws -> QRFormat {
        if let format { return format }
        guard let output, output != "-" else { return .terminal }
        switch (output as NSString).pathExtension.lowercased() {
        case "png": return .png
        case "svg": return .svg
        case "txt": return .text
        default: throw MeishiFailure.unknownQRExtension(output)
        }
    }

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let format = try resolvedFormat()
        if invert, format != .terminal { throw MeishiFailure.invertNeedsTerminal(format.rawValue) }
        if format == .png, output == nil, ctx.terminal.standardOutputIsTerminal {
            throw MeishiFailure("refusing to write PNG data to a terminal", hint: "use -o FILE, or -o - to write it to standard output",
                                status: .usage)
        }
        let settings = try Settings.load(ctx)
        let level = self.level ?? settings.level ?? .professional, fields = self.fields ?? settings.fields
        let card = try session.cards.loadCard()
        let only = try fields?.names
        let (text, mode) = solidarity
            ? (try SolidarityService.issue(card: card, level: level, only: only, home: session.home,
                                           passphrases: ctx.passphrases, now: ctx.unixNow), .utf8)
            : try QRService.content(card: card, level: level, only: only, vcard: vcard, home: session.home,
                                    passphrases: ctx.passphrases, now: ctx.unixNow)
        // The meishi card names the Solidarity identity back, so the link is proven both ways.
        if solidarity, let did = try SolidarityService.linkCard(home: session.home) {
            ctx.out.note("your meishi card now names this Solidarity identity (x-same-as \(did), public): contacts holding both "
                         + "cards keep them as one contact once they have a meishi card signed since")
        }
        let ecc = ecc ?? (solidarity ? .L : .M)
        let what = vcard ? "unsigned vCard" : solidarity ? "Solidarity card" : "signed card"
        if format == .text {
            try FileOutput.write(Array(text.utf8) + [0x0A], to: output, mode: fileMode, ctx: ctx, home: session.home, text: true)
            if let output, output != "-" { ctx.out.note("\(what) at level \(level.rawValue) as QR text, written to \(output)") }
            return
        }
        let matrix = try Self.matrix(text, mode: mode, correction: ecc)
        let bytes: [UInt8]
        switch format {
        case .terminal:
            try Self.checkFits(matrix, output: output, ctx: ctx, shareLess: MeishiFailure.shareLess(level: level, fieldsChosen: fields != nil))
            bytes = Array(QRRender.terminal(matrix, inverted: invert, colours: ctx.usesColour && (output == nil || output == "-")).utf8)
        case .svg: bytes = Array(QRRender.svg(matrix, scale: scale).utf8)
        case .png:
            do { bytes = try QRRender.png(matrix, scale: scale) } catch { throw MeishiError.qr(error) }
        case .text: return
        }
        try FileOutput.write(bytes, to: output, mode: fileMode, ctx: ctx, home: session.home)
        ctx.out.note("\(what) at level \(level.rawValue): QR version \(matrix.version), \(matrix.size)x\(matrix.size) modules, ECC \(ecc.rawValue)"
                    + (output.map { $0 == "-" ? "" : ", written to \($0)" } ?? ""))
    }
}

extension CardQR {
    /// The QR matrix; content too large for a QR is said with the way out that fits `correction`.
    static func matrix(_ text: String, mode: QREncoder.Mode, correction: QRErrorCorrection) throws -> QRMatrix {
        do { return try QRService.matrix(text, mode: mode, correction: correction) } catch .qr(.contentTooLarge(let n)) {
            throw MeishiFailure.qrTooLarge(characters: n, correction: correction)
        }
    }

    /// A QR printed on a terminal smaller than the code would wrap and not scan, so that is
    /// refused with the ways out (fewer values, or a picture file).
    static func checkFits(_ matrix: QRMatrix, output: String?, ctx: Context, shareLess: String? = nil,
                          file: String = "write a picture: -o card.png") throws {
        guard output == nil || output == "-", ctx.terminal.standardOutputIsTerminal, let columns = ctx.terminal.width else { return }
        let needed = QRRender.terminalColumns(matrix)
        let rows = ctx.terminal.height
        guard needed > columns || rows.map({ (needed + 1) / 2 > $0 }) == true else { return }
        throw MeishiFailure.qrDoesNotFit(version: matrix.version, columns: needed, rows: (needed + 1) / 2,
                                         terminalColumns: columns, terminalRows: rows, shareLess: shareLess, file: file)
    }
}
