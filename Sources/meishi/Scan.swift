import ArgumentParser
import Foundation
import MeishiCard
import MeishiKit
import MeishiStore

struct Scan: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Read QR codes from images; verify and store the meishi cards in them.",
        discussion: """
            Reads PNG, JPEG, PGM and PPM files, or standard input with '-' (at most 50 megapixels). Every \
            QR code in an image is reported once. A meishi card is verified like 'meishi verify' and \
            stored as 'signed'; so is a Solidarity app card (ES256, P-256 did:key), with its age. A vCard, \
            MECARD, Solidarity plaintext envelope or solidarity:// link is shown, and stored as 'unsigned' \
            with --import; \
            anything else is reported as not a meishi card (exit 65). Exit 65 as well when an image holds \
            no QR code.

            With --camera, frames come from a V4L2 camera (default /dev/video0, or the device named) \
            until the first meishi or Solidarity card is in view (a vCard or MECARD too with --import; \
            any code with --raw), which is then handled as above.

            Examples:
              meishi scan photo.jpg
              meishi scan --raw - < screenshot.png
              meishi scan --camera --timeout 2m
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Image files, or - for standard input (with --camera: the camera device).", valueName: "image"),
              completion: .file())
    var images: [String] = []

    @Flag(help: "Print the text of every QR code found, one per line; verify and store nothing.")
    var raw = false

    @Flag(help: "Show what would be stored without storing it.")
    var dryRun = false

    @Flag(name: .customLong("import"), help: "Store vCard, MECARD and unsigned Solidarity codes as 'unsigned' contacts.")
    var importContacts = false

    @Flag(help: "Print every code found, with its position and verdict, as JSON.")
    var json = false

    @Flag(help: "Read frames from a camera until a card is in view.")
    var camera = false

    @Option(help: ArgumentHelp("With --camera: give up after this long (e.g. 30s, 2m).", valueName: "duration"))
    var timeout: DurationArgument = DurationArgument(argument: "60")!

    @OptionGroup var meeting: EventOption

    func validate() throws {
        guard camera else {
            if timeout.seconds != 60 { throw ValidationError("--timeout goes with --camera") }
            return try validateInputFiles(images, kind: "image")
        }
        guard images.count <= 1 else { throw ValidationError("--camera reads one device; name at most one, as in --camera /dev/video1") }
        guard timeout.seconds > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run(_ ctx: Context) throws {
        if camera { return try watch(ctx) }
        let session = try global.session(ctx, needsIdentity: !raw)
        let event = raw ? nil : try meeting.resolved(ctx)
        let verifier = CardVerifier(clock: ctx.unixClock)
        var worst: MeishiFailure?
        var report: [JSONValue] = []
        /// Reports `f`, and puts it in `entry` as every --json error reads: error, hint, status.
        func fail(_ f: MeishiFailure, _ entry: inout [String: JSONValue]) {
            if !json || !raw { ctx.out.report(f) }
            if worst == nil || f.status.rawValue > worst!.status.rawValue { worst = f }
            if case .object(let members) = f.jsonDocument { entry.merge(members) { $1 } }
        }
        for file in images {
            var entry: [String: JSONValue] = ["file": .string(file)]
            defer { report.append(.object(entry)) }
            let codes: [ScannedCode]
            do throws(MeishiError) {
                if file == "-", ctx.terminal.isInteractive { ctx.out.note(Context.waitingForStandardInput("an image")) }
                session.step("reading \(file == "-" ? "standard input" : file)")
                let bytes = try ctx.readAtMost(file, limit: QRService.maximumFileBytes)
                if bytes.isEmpty {
                    fail(MeishiFailure.emptyInput(file), &entry)
                    continue
                }
                codes = try QRService.scan(bytes, verifier: verifier)
                session.step("\(file): \(codes.count) QR code\(codes.count == 1 ? "" : "s") found")
            } catch {
                fail(MeishiFailure(error).located(file == "-" ? "standard input" : file), &entry)
                continue
            }
            if codes.isEmpty {
                fail(MeishiFailure("\(file): no QR code found", hint: "a sharper, larger or better-lit picture may help", status: .dataError),
                     &entry)
                continue
            }
            var listed: [JSONValue] = []
            // A code that is no card beside one that is (a URL printed next to the card) is a
            // note, not a failure: the card is what the person scanned for.
            let holdsACard = codes.contains { if case .other = $0.content { false } else { true } }
            for code in codes {
                session.step("\(file): a \(code.kind) code, found by the scanner's \(code.pass) pass")
                if raw {
                    // Unchanged for a pipe; on a terminal, escaped like all peer text (a QR code
                    // may hold escape sequences).
                    if !json && ctx.terminal.standardOutputIsTerminal {
                        ctx.out.line(Console.safe(code.text))
                    } else if !json {
                        ctx.out.bytes(TextDecoding.rawOutput(code.bytes) + [0x0A])
                    }
                    listed.append(.object(codeJSON(code)))
                    continue
                }
                var obj = codeJSON(code)
                do { try handle(code, file: file, session: session, event: event, into: &obj) } catch let f as MeishiFailure {
                    if holdsACard, case .other = code.content {
                        if !json { ctx.out.note(Self.otherCodeBesideCard(file: file, text: code.text)) }
                    } else {
                        fail(f, &obj)
                    }
                } catch let e as MeishiError {
                    fail(MeishiFailure(e), &obj)
                }
                listed.append(.object(obj))
            }
            entry["codes"] = .array(listed)
        }
        if json { ctx.out.json(.object(["files": .array(report)])) }
        if let worst { throw ExitCode(worst.status.rawValue) }
    }

    /// --camera: the first wanted code in view, handled as a code in an image file is.
    func watch(_ ctx: Context) throws {
        let session = try global.session(ctx, needsIdentity: !raw)
        let device = images.first ?? "/dev/video0"
        let source = try ctx.openCamera(device)
        let out = ctx.out
        out.note("reading \(device): hold the QR code up to the camera (--timeout \(timeout.seconds)s)")
        let deadline = ctx.now.addingTimeInterval(Double(timeout.seconds))
        let (code, frames) = try CameraScan.firstCode(
            from: source, device: device, verifier: CardVerifier(clock: ctx.unixClock), timeoutSeconds: Int(timeout.seconds),
            expired: { ctx.now >= deadline },
            wanted: { code in
                switch code.content {
                case .contact: raw || importContacts
                case .other, .unsupported: raw
                default: true
                }
            },
            passing: { code in
                let take = if case .contact = code.content { " (--import takes it)" } else { "" }
                out.note("passing over a \(code.kind) code\(take); waiting for a card")
            })
        out.note("read a \(code.kind) code in frame \(frames)")
        var obj = codeJSON(code)
        defer { if json { out.json(.object(["files": .array([.object(["file": .string(device), "codes": .array([.object(obj)])])])])) } }
        if raw {
            if !json { out.line(Console.safe(code.text)) }
            return
        }
        try handle(code, file: device, session: session, event: raw ? nil : try meeting.resolved(ctx), into: &obj)
    }

    func codeJSON(_ code: ScannedCode) -> [String: JSONValue] {
        [
            "text": .string(code.text),
            "kind": .string(code.kind),
            "points": .array(code.points.map { .array([.number(Double($0.x)), .number(Double($0.y))]) }),
        ]
    }

    /// Verifies and stores what `code` holds; a stored card records a `qr` meeting at `event`.
    func handle(_ code: ScannedCode, file: String, session: HomeSession, event: String?, into obj: inout [String: JSONValue]) throws {
        let out = session.ctx.out
        switch code.content {
        case .card(let card):
            obj["verdict"] = .string("valid")
            obj["payload"] = card.payload.jsonValue()
            if dryRun {
                obj["stored"] = .bool(false)
                let own = (try? session.identities.loadPublic().did) == card.payload.senderDID
                if !json { printCard(card, own: own, out) }
                return
            }
            let outcome = try session.contacts.add(card, trust: .signed, source: .qr, now: session.ctx.unixNow,
                                                   meeting: Meeting(at: session.ctx.unixNow, how: .qr, event: event))
            obj["stored"] = .bool(true)
            obj["result"] = .string(outcome.name)
            obj["contact"] = CardRendering.json(outcome.contact)
            if !json { out.reportStored(outcome) }
        case .invalidCard(let e):
            obj["verdict"] = .string(e.verdict)
            obj["reason"] = .string(e.reason)
            throw MeishiFailure(e).located(file)
        case .contact(let c):
            obj["contact"] = .object(["fields": CardRendering.fields(c.fields)])
            if !json {
                out.line("\(Console.safe(c.format.description)) (unsigned) for \(CardRendering.name(c.name))")
                if !c.fields.isEmpty { out.line(CardRendering.block(c.fields, rows: [])) }
            }
            guard importContacts, !dryRun else {
                obj["stored"] = .bool(false)
                if !json && !dryRun { out.note("not stored: use --import to keep it as an unsigned contact") }
                return
            }
            let outcome = try QRService.importUnsigned(c, raw: code.bytes, into: try session.contacts.open(), now: session.ctx.unixNow,
                                                   event: event)
            obj["stored"] = .bool(true)
            obj["result"] = .string(outcome.name)
            if !json { out.reportStored(outcome) }
        case .solidarityCard(let card): try handleSolidarity(card, session: session, event: event, into: &obj)
        case .invalidSolidarityCard(let e): try handleInvalidSolidarity(e, file: file, into: &obj)
        case .unsupported(let kind): try handleUnsupported(kind, file: file, into: &obj)
        case .other:
            obj["verdict"] = .string("not-a-card")
            let preview = code.text.count > 120 ? String(code.text.prefix(120)) + "…" : code.text
            throw MeishiFailure("\(file): not a meishi card: \"\(Console.safe(preview))\"", hint: "use --raw to print any QR code's text",
                                status: .dataError)
        }
    }

    func printCard(_ card: VerifiedCard, own: Bool, _ out: Console) {
        let p = card.payload
        out.line("valid card from \(CardRendering.name(p.displayName)) (\(own ? "your own card; " : "")not stored: --dry-run)\n"
                 + CardRendering.block(CardRendering.fields(of: p), rows: [("did", p.senderDID)]))
    }
}

extension Scan {
    /// The note for a QR code beside a card that is not one.
    static func otherCodeBesideCard(file: String, text: String) -> String {
        let preview = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return "\(file): also holds a QR code that is not a card, left alone: \"\(Console.safe(preview))\""
    }
}
