import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

struct Scan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read QR codes from images; verify and store the meishi cards in them.",
        discussion: """
            Reads PNG, JPEG, PGM and PPM files, or standard input with '-' (at most 50 megapixels). Every \
            QR code in an image is reported once. A meishi card is verified like 'meishi verify' and \
            stored as 'signed'; so is a Solidarity app card (ES256, P-256 did:key), with its age. A vCard, \
            MECARD, Solidarity plaintext envelope or solidarity:// link is shown, and stored as 'unsigned' \
            with --import; \
            anything else is reported as not a meishi card (exit 65). Exit 65 as well when an image holds \
            no QR code.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Image files, or - for standard input.", valueName: "image"))
    var images: [String]

    @Flag(help: "Print the text of every QR code found, one per line; verify and store nothing.")
    var raw = false

    @Flag(help: "Show what would be stored without storing it.")
    var dryRun = false

    @Flag(name: .customLong("import"), help: "Store vCard, MECARD and unsigned Solidarity codes as 'unsigned' contacts.")
    var importContacts = false

    @Flag(help: "Print every code found, with its position and verdict, as JSON.")
    var json = false

    func validate() throws {
        guard !images.isEmpty else { throw ValidationError("name at least one image file, or - for standard input") }
        guard images.filter({ $0 == "-" }).count <= 1 else { throw ValidationError("standard input can be read only once") }
    }

    func run() throws {
        let ctx = try global.context()
        var worst: MeishiFailure?
        var report: [JSONValue] = []
        func fail(_ f: MeishiFailure) {
            if !json || !raw { Output.report(f) }
            if worst == nil || f.status.rawValue > worst!.status.rawValue { worst = f }
        }
        for file in images {
            var entry: [String: JSONValue] = ["file": .string(file)]
            defer { report.append(.object(entry)) }
            let codes: [ScannedCode]
            do {
                let bytes = try SecureFile.read(file, limit: QRService.maximumFileBytes)
                guard bytes.count <= QRService.maximumFileBytes else {
                    throw MeishiFailure("\(file) is larger than \(QRService.maximumFileBytes >> 20) MiB", status: .dataError)
                }
                codes = try QRService.scan(bytes, now: ctx.now)
            } catch let f as MeishiFailure {
                let located = MeishiFailure("\(file): \(f.message)", hint: f.hint, status: f.status)
                entry["error"] = .string(located.message)
                fail(located)
                continue
            }
            if codes.isEmpty {
                let f = MeishiFailure("\(file): no QR code found", hint: "a sharper, larger or better-lit picture may help", status: .dataError)
                entry["error"] = .string(f.message)
                fail(f)
                continue
            }
            var listed: [JSONValue] = []
            for code in codes {
                if raw {
                    if !json { FileHandle.standardOutput.write(Data(TextDecoding.rawOutput(code.bytes) + [0x0A])) }
                    listed.append(.object(codeJSON(code)))
                    continue
                }
                var obj = codeJSON(code)
                do { try handle(code, file: file, ctx: ctx, into: &obj) } catch let f as MeishiFailure { fail(f) }
                listed.append(.object(obj))
            }
            entry["codes"] = .array(listed)
        }
        if json { Output.json(.object(["files": .array(report)])) }
        if let worst { throw ExitCode(worst.status.rawValue) }
    }

    func codeJSON(_ code: ScannedCode) -> [String: JSONValue] {
        [
            "text": .string(code.text),
            "kind": .string(code.kind),
            "points": .array(code.points.map { .array([.number(Double($0.x)), .number(Double($0.y))]) }),
        ]
    }

    func handle(_ code: ScannedCode, file: String, ctx: Context, into obj: inout [String: JSONValue]) throws {
        switch code.content {
        case .card(let card):
            obj["verdict"] = .string("valid")
            obj["payload"] = card.payload.jsonValue()
            if dryRun {
                obj["stored"] = .bool(false)
                if !json { printCard(card) }
                return
            }
            let outcome = try ctx.contacts.add(card, trust: .signed, source: "qr", now: ctx.now)
            obj["stored"] = .bool(true)
            obj["result"] = .string(outcome.name)
            obj["contact"] = Output.contactJSON(outcome.contact)
            if !json { Output.reportStored(outcome) }
        case .invalidCard(let e):
            obj["verdict"] = .string(e.verdict)
            obj["reason"] = .string(e.reason)
            throw MeishiFailure("\(file): \(e.reason)", status: .dataError)
        case .contact(let c):
            obj["contact"] = .object(["fields": .object(c.fields.mapValues { .array($0.map(JSONValue.string)) })])
            if !json {
                print("\(c.format) (unsigned) for \(Output.safe(c.name ?? "(no name)"))")
                print(Output.fieldLines(Output.orderedFields(c.fields)), terminator: "")
            }
            guard importContacts, !dryRun else {
                obj["stored"] = .bool(false)
                if !json && !dryRun { Output.note("not stored: use --import to keep it as an unsigned contact") }
                return
            }
            let outcome = try QRService.importUnsigned(c, raw: code.bytes, home: ctx.home, now: ctx.now)
            obj["stored"] = .bool(true)
            obj["result"] = .string(outcome.name)
            if !json { Output.reportStored(outcome) }
        case .solidarityCard(let card): try handleSolidarity(card, into: &obj, ctx: ctx)
        case .invalidSolidarityCard(let e): try handleInvalidSolidarity(e, file: file, into: &obj)
        case .unsupported(let kind): try handleUnsupported(kind, file: file, into: &obj)
        case .other:
            obj["verdict"] = .string("not-a-card")
            let preview = code.text.count > 120 ? String(code.text.prefix(120)) + "…" : code.text
            throw MeishiFailure("\(file): not a meishi card: \"\(Output.safe(preview))\"", hint: "use --raw to print any QR code's text",
                                status: .dataError)
        }
    }

    func printCard(_ card: VerifiedCard) {
        let p = card.payload
        print("valid card from \(Output.safe(p.displayName ?? "(no name)")) (not stored: --dry-run)")
        print(Output.fieldLines(p.orderedFields), terminator: "")
        print("  did          \(p.senderDID)")
    }
}
