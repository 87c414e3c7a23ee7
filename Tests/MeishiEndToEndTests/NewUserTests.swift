import Foundation
import GRDB
import Testing
import MeishiCard
import MeishiText
import MeishiCrypto
import MeishiQR
import MeishiStore
import MeishiKit
@testable import meishi

/// Issue 12: the rough edges of a first afternoon with meishi, each run in-process on an injected
/// context (terminal size, answers, environment) unless it needs a real shell.
@Suite struct NewUserTests {
    /// A home with an identity and a name.
    static func person(_ name: String = "Mei Tanaka", answers: [String] = [], interactive: Bool = false) async -> InProcess {
        let p = InProcess(answers: answers, interactive: interactive)
        #expect(await p("init").status == 0)
        #expect(await p("card", "set", "name", name).status == 0)
        return p
    }

    static func write(_ text: String, _ name: String) throws -> String {
        let path = Fixtures.temporaryDirectory() + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    // MARK: Wrong or unhelpful messages

    @Test func aBadFieldInFieldsIsNamedWithTheValidOnes() async {
        let mei = await Self.person()
        let r = await mei("card", "export", "--fields", "name,bogus")
        #expect(r.status == 64)
        #expect(r.err == "meishi: error: unknown field \"bogus\"\nmeishi: hint: fields are name, title, org, email, phone, url, address, note or x-<word>\n")
        #expect(await mei("card", "qr", "--fields", "bogus,name", "-o", "-", "--format", "text").err.contains("unknown field \"bogus\""))
    }

    @Test func aFileIsNamedOnceAndItsSizeIsNotGuessed() async throws {
        let mei = await Self.person()
        let missing = Fixtures.temporaryDirectory() + "/nosuch.png"
        let r = await mei("scan", missing)
        #expect(r.status == 66)
        #expect(r.err.components(separatedBy: missing).count == 2, "the path once: \(r.err)")
        let big = try Self.write(String(repeating: "x", count: 20_000), "big.json")
        let v = await mei("verify", big)
        #expect(v.status == 65)
        #expect(v.err.hasPrefix("meishi: error: \(big) is larger than 16 KiB") && !v.err.contains("16385"), "\(v.err)")
    }

    @Test func aCardTooBigForAnyQRDoesNotSuggestTheLevelItAlreadyHas() async {
        let mei = await Self.person()
        for n in 0..<24 {
            #expect(await mei("card", "set", "x-note\(n)", String(repeating: "long text \(n) ", count: 18)).status == 0)
        }
        let l = await mei("card", "qr", "--level", "personal", "--ecc", "L", "-o", Fixtures.temporaryDirectory() + "/c.png")
        #expect(l.status == 65 && l.err.contains("at ECC L") && !l.err.contains("--ecc L"), "\(l.err)")
        let m = await mei("card", "qr", "--level", "personal", "-o", Fixtures.temporaryDirectory() + "/c.png")
        #expect(m.status == 65 && m.err.contains("or use --ecc L"), "\(m.err)")
    }

    /// A card and a URL in one picture: the card is stored, the URL is a note, exit 0.
    @Test func aURLBesideTheCardIsANote() async throws {
        let ken = await Self.person("Ken Sato")
        let text = await ken("card", "qr", "--format", "text").out.trimmingCharacters(in: .newlines)
        let card = QRRender.grayImage(try QREncoder.encode(text, mode: .alphanumeric, correction: .M), scale: 4)
        let url = QRRender.grayImage(try QREncoder.encode("https://example.org/ken", mode: .utf8, correction: .M), scale: 4)
        // Side by side on white, as a PGM (P5).
        let height = max(card.height, url.height), width = card.width + url.width
        var pixels = [UInt8](repeating: 255, count: width * height)
        for y in 0..<card.height { for x in 0..<card.width { pixels[y * width + x] = card.pixels[y * card.width + x] } }
        for y in 0..<url.height { for x in 0..<url.width { pixels[y * width + card.width + x] = url.pixels[y * url.width + x] } }
        let path = Fixtures.temporaryDirectory() + "/both.pgm"
        try Data(Array("P5\n\(width) \(height)\n255\n".utf8) + pixels).write(to: URL(fileURLWithPath: path))
        let mei = await Self.person()
        let r = await mei("scan", path)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasPrefix("added Ken Sato as #1 (signed)"))
        #expect(r.err.contains("also holds a QR code that is not a card, left alone: \"https://example.org/ken\""), "\(r.err)")
        // Only the URL: still not a card (exit 65).
        let urlPath = Fixtures.temporaryDirectory() + "/url.pgm"
        try Data(Array("P5\n\(url.width) \(url.height)\n255\n".utf8) + url.pixels).write(to: URL(fileURLWithPath: urlPath))
        #expect(await mei("scan", urlPath).status == 65)
    }

    @Test func jsonErrorsAreOneDocumentOnStandardOutput() async throws {
        let mei = await Self.person()
        func doc(_ r: (status: Int32, out: String, err: String)) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        }
        var r = await mei("contacts", "show", "nobody", "--json")
        var d = try doc(r)
        #expect(r.status == 66 && d["error"] as? String == "no contact matches \"nobody\"" && d["status"] as? Int == 66)
        #expect(d["hint"] as? String == "see 'meishi contacts list'")
        r = await mei("contacts", "list", "--limit", "0", "--json")
        d = try doc(r)
        #expect(r.status == 64 && d["status"] as? Int == 64 && (d["error"] as? String)?.contains("--limit") == true)
        let bad = try Self.write("{\"v\":1}", "bad.json")
        r = await mei("verify", bad, "--json")
        d = try doc(r)
        #expect(r.status == 65 && d["verdict"] as? String == "malformed" && d["valid"] as? Bool == false && d["error"] != nil)
        // Without --json nothing goes to standard output.
        #expect(await mei("contacts", "show", "nobody").out.isEmpty)
    }

    // MARK: Output

    @Test func columnsArePaddedByDisplayWidth() async throws {
        let mei = await Self.person()
        for (name, org) in [("山田 太郎", "東京ロボット"), ("Ken Sato", "Example")] {
            let other = await Self.person(name)
            #expect(await other("card", "set", "org", org).status == 0)
            var m = mei
            m.stdin = Array(await other("card", "export").out.utf8)
            #expect(await m("contacts", "add", "-").status == 0)
        }
        let lines = await mei("contacts", "list").out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        // TRUST starts at the same display column on every line.
        let columns = lines.map { line -> Int in
            let range = line.range(of: line == lines[0] ? "TRUST" : "signed")!
            return DisplayWidth.of(String(line[..<range.lowerBound]))
        }
        #expect(Set(columns).count == 1, "\(lines)")
        // On a 40-column terminal rows stay on one line: columns dropped, values cut, levels kept.
        var narrow = mei
        narrow.outputTerminal = (40, 30)
        #expect(await narrow("card", "add", "email", "a.rather.long.address@example.org").status == 0)
        #expect(await narrow("card", "add", "phone", "+81 90 1234 5678").status == 0)
        // A long name and a flagged newcomer ("signed !") still fit: the names give way.
        for name in ["Bartholomew Alexander Fitzgerald-Smythe", "Ken Sato"] {
            var m = mei
            m.stdin = Array(await Self.person(name)("card", "export").out.utf8)
            #expect(await m("contacts", "add", "-").status == 0)
        }
        // Notes, warnings and hints on a 40-column terminal are broken at spaces, never mid-word.
        var narrowErr = narrow
        narrowErr.errorTerminal = true
        let legend = await narrowErr.run(["friends"]).err
        #expect(legend.split(separator: "\n").allSatisfy { DisplayWidth.of(String($0)) <= 40 } && legend.contains("\n  "), "\(legend)")
        #expect(legend.replacingOccurrences(of: "\n  ", with: " ").contains(FriendsWording.neverComparedLegend))
        for args in [["contacts", "list"], ["card", "show"], ["friends"]] {
            let out = await narrow.run(args).out
            #expect(out.split(separator: "\n").allSatisfy { DisplayWidth.of(String($0)) <= 40 }, "\(args): \(out)")
            #expect(args[0] != "card" || out.contains("[professional]"))
        }
        #expect(DisplayWidth.of("山田 太郎") == 9 && DisplayWidth.of("e\u{301}") == 1 && DisplayWidth.of("Ｍ") == 2)
        #expect(DisplayWidth.padded("山田", to: 6) == "山田  " && DisplayWidth.truncated("山田太郎", to: 5) == "山田…")
        #expect(DisplayWidth.wrapped("one two three four", to: 9) == ["one two", "  three", "  four"])
        #expect(DisplayWidth.wrapped("supercalifragilistic word", to: 8) == ["superca…", "  word"])
        #expect(DisplayWidth.wrapped("saved in /a/long/path.sqlite ok", to: 8, keepingWords: true) == ["saved in", "  /a/long/path.sqlite", "  ok"])
    }

    @Test func theTerminalQRFitsOrSaysWhatToDo() async throws {
        var mei = await Self.person()
        mei.outputTerminal = (40, 30)
        let r = await mei("card", "qr")
        #expect(r.status == 64 && r.out.isEmpty)
        #expect(r.err.contains("this terminal has 40x30") && r.err.contains("--level public") && r.err.contains("-o card.png"), "\(r.err)")
        // Already public: the hint does not suggest it again, only fewer fields; with those too, neither.
        let pub = await mei("card", "qr", "--level", "public")
        #expect(!pub.err.contains("--level public") && pub.err.contains("--fields name,email"), "\(pub.err)")
        let least = await mei("card", "qr", "--level", "public", "--fields", "name")
        #expect(least.status == 64 && !least.err.contains("--fields") && !least.err.contains("--level"), "\(least.err)")
        mei.outputTerminal = (200, 80)
        let fits = await mei("card", "qr")
        #expect(fits.status == 0 && fits.out.contains("\u{1B}["), "colours on a terminal")
        mei.environment["NO_COLOR"] = "1"
        let plain = await mei("card", "qr")
        #expect(plain.status == 0 && !plain.out.contains("\u{1B}") && plain.out.contains("█"))
        mei.outputTerminal = nil
        mei.environment = [:]
        #expect(!(await mei("card", "qr")).out.contains("\u{1B}"), "no escapes into a pipe")
        // Inverted plain art draws the light modules: the quiet zone is a full row of blocks.
        #expect((await mei("card", "qr", "--invert")).out.hasPrefix(String(repeating: "█", count: 10)))
        let dir = Fixtures.temporaryDirectory()
        let jpg = await mei("card", "qr", "-o", dir + "/card.jpg")
        #expect(jpg.status == 64 && jpg.err.contains(".png, .svg and .txt") && !FileManager.default.fileExists(atPath: dir + "/card.jpg"))
        let txt = await mei("card", "qr", "-o", dir + "/card.txt")
        #expect(txt.status == 0 && txt.err.contains("written to \(dir)/card.txt"))
        #expect(await mei("card", "qr", "--invert", "-o", dir + "/card.png").status == 64)
        #expect(await mei("card", "qr", "--ecc", "h", "-o", dir + "/card.svg").err.contains("ECC H"))
    }

    @Test func theNewcomerIsNamedAndFlaggedContactsAreMarked() async throws {
        let mei = await Self.person()
        let realKen = await Self.person("Ken Sato")
        let fakeKen = await Self.person("Ken Sato")
        var m = mei
        m.stdin = Array(await realKen("card", "export").out.utf8)
        #expect(await m("contacts", "add", "-").status == 0)
        m.stdin = Array(await fakeKen("card", "export").out.utf8)
        let fake = await m("contacts", "add", "-")
        #expect(fake.err.hasPrefix("meishi: warning: Ken Sato uses the same name or email as contact #1"), "\(fake.err)")
        // The first Ken, untouched since, names the one stored after it; --json tells the two directions apart.
        #expect(await m("contacts", "show", "1").out.contains("contact #2, stored after it, has the same name or email"))
        let first = await m("contacts", "show", "1", "--json").out.filter { !$0.isWhitespace }
        #expect(first.contains("\"possiblyImpersonatedBy\":[2]") && first.contains("\"possibleImpersonationOf\":[]"), "\(first)")
        // Wherever a sender or friend is named (inbox, listen, exchange notes, common friends), a
        // newcomer carries its id and the mark; the one it copies only its id.
        var lookAlike = Contact(did: "did:key:z6MkX", fields: [.name: ["Ken Sato"]], level: .professional, trust: .signed, source: .file,
                                seen: 1, cardTimestamp: 1)
        lookAlike.id = 5
        lookAlike.conflictsWith = "2,7"
        #expect(CardRendering.who(lookAlike) == "Ken Sato (#5, signed) ! same name or email as #2")
        var original = lookAlike
        original.id = 2
        original.conflictsWith = "5"
        #expect(CardRendering.who(original) == "Ken Sato (#2, signed)")
        #expect(FriendsWording.list([original, lookAlike]) == "Common friends (2): Ken Sato (#2), Ken Sato (#5 ! same name or email as #2)")
        let friends = await m("friends")
        #expect(friends.out.contains("#2!") && !friends.out.contains("#1!") && friends.err.contains("! possible impersonation"), "\(friends)")
        // The real Ken's newer card: #2, stored later, is the newcomer.
        var ken = realKen
        ken.now = ken.now.addingTimeInterval(60)
        m.now = ken.now
        m.stdin = Array(await ken("card", "export").out.utf8)
        let real = await m("contacts", "add", "-")
        #expect(real.err.contains("contact #2 Ken Sato") && real.err.contains("#2 may be impersonating them"), "\(real.err)")
        let list = await m("contacts", "list").out
        #expect(list.contains("signed !") && list.contains("! possible impersonation"), "\(list)")
        // Only the newcomer is marked; `contacts show` of the first names the one after it.
        let marked = list.split(separator: "\n").filter { $0.contains("signed !") }
        #expect(marked.count == 1 && marked.first?.hasPrefix("#2 ") == true, "\(list)")
        #expect(await m("contacts", "show", "1").out.contains("contact #2, stored after it, has the same name or email"))
        #expect(list.contains(await realKen("id", "--json").out.split(separator: "\"")[3]), "piped: whole DIDs")
    }

    /// Trial 7, F16: `--home ""` (a script's unset `$DIR`) meant the person's own home, and an
    /// empty MEISHI_HOME was named as the source of the default it did not give. Now the empty
    /// flag is a usage error (nothing created anywhere) and the empty variable is said to be ignored.
    @Test func anEmptyHomeIsRefusedAndAnEmptyMeishiHomeIgnored() async {
        let xdg = Fixtures.temporaryDirectory() + "/xdg"
        var someone = InProcess()
        someone.environment = ["MEISHI_HOME": "", "XDG_DATA_HOME": xdg, "HOME": xdg + "/home"]
        for flag in ["", " "] {
            let r = await someone("init", "--home", flag)
            #expect(r.status == 64 && r.err.contains("--home cannot be empty"), "\(r)")
        }
        #expect(!FileManager.default.fileExists(atPath: xdg), "an empty --home created a home")
        #expect(await someone("init").status == 0)
        let v = await someone("id", "--verbose")
        #expect(v.err.contains("meishi: debug: home \(xdg)/meishi (XDG_DATA_HOME; MEISHI_HOME is empty and ignored)"), "\(v.err)")
    }

    @Test func verboseSaysEachStepAndStandardInputIsAnnounced() async {
        var mei = await Self.person(interactive: true)
        let r = await mei("contacts", "list", "--verbose")
        #expect(r.err.contains("meishi: debug: home \(mei.home) (MEISHI_HOME)") && r.err.contains("contacts \(mei.home)/meishi.sqlite"), "\(r.err)")
        let png = Fixtures.temporaryDirectory() + "/card.png"
        #expect(await mei("card", "qr", "-o", png).status == 0)
        #expect(await mei("scan", "--dry-run", png).out.hasPrefix("valid card from Mei Tanaka (your own card; not stored: --dry-run)"))
        let v = await mei("scan", "--raw", "-v", png)
        #expect(v.err.contains("\(png): a meishi-card code, found by the scanner's first pass"), "\(v.err)")
        mei.stdin = []
        let s = await mei("scan", "-")
        #expect(s.err.hasPrefix("meishi: waiting for an image on standard input"), "\(s.err)")
        #expect(s.status == 66 && s.err.contains("nothing arrived on standard input"))
    }

    // MARK: Input

    @Test func addressesRunOverLinesAndPhonesHaveExtensions() async {
        let mei = await Self.person()
        #expect(await mei("card", "set", "address", "1-2-3 Shibuya\nTokyo 150-0002").status == 0)
        #expect(await mei("card", "set", "note", "a\u{1B}[31mred").status == 65)
        let phone = await mei("card", "add", "phone", "+1 (555) 010-9999 ext 12")
        #expect(phone.status == 0, "\(phone.err)")
        let show = await mei("card", "show").out
        #expect(show.contains("1-2-3 Shibuya") && show.contains("\n           Tokyo 150-0002"), "\(show)")
        #expect(show.contains("(+15550109999)"))
        #expect(CardText.withoutExtension("+1 555 0100 x7") == "+1 555 0100" && !CardText.isPhoneShaped("ext 12"))
        // card edit keeps the lines: continuation lines, indented.
        let text = CardEditText.text(of: try! CardEditText.card(from: "name: Mei\naddress: 1-2-3\n    Tokyo\n"))
        #expect(text.hasSuffix("address [personal]: 1-2-3\n    Tokyo\n"))
    }

    @Test func aValuesLevelCanBeChanged() async {
        let mei = await Self.person()
        #expect(await mei("card", "add", "email", "m@example.org").status == 0)
        let r = await mei("card", "add", "email", "m@example.org", "--level", "personal")
        #expect(r.status == 0 && r.out == "email m@example.org: level professional -> personal\n")
        let again = await mei("card", "add", "email", "m@example.org")
        #expect(again.status == 65 && again.err.contains("hint: to change its level: meishi card add email VALUE --level LEVEL"))
    }

    @Test func optionValuesAreReadAsPeopleTypeThem() async {
        let mei = await Self.person()
        let r = await mei("contacts", "list", "--limit", "-1")
        #expect(r.status == 64 && r.err.hasPrefix("meishi: error: --limit must be at least 1"), "\(r.err)")
        let trust = await mei("contacts", "list", "--trust", "bogus")
        #expect(trust.status == 64 && trust.err == "meishi: error: --trust cannot be 'bogus'\nmeishi: hint: choose one of 'unsigned', 'signed' or 'met'\n")
    }

    @Test func aHomeWithoutAnIdentityIsRefusedAndLeftUncreated() async throws {
        let nobody = InProcess()
        for args in [["contacts", "list"], ["card", "set", "name", "X"], ["card", "show"], ["id"], ["contacts", "import", "-"]] {
            let r = await nobody.run(args)
            #expect(r.status == 66 && r.err.hasPrefix("meishi: error: no identity in \(nobody.home)\nmeishi: hint: run 'meishi init'"), "\(args): \(r.err)")
        }
        #expect(!FileManager.default.fileExists(atPath: nobody.home))
        // verify needs no identity, and creates nothing.
        let mei = await Self.person()
        let card = try Self.write(await mei("card", "export").out, "mei.json")
        #expect(await nobody("verify", card).status == 0)
        let png = Fixtures.temporaryDirectory() + "/card.png"
        #expect(await mei("card", "qr", "-o", png).status == 0)
        let raw = await nobody("scan", "--raw", png)
        #expect(raw.status == 0 && raw.out.hasPrefix("MEISHI1:"), "\(raw.err)")
        #expect(!FileManager.default.fileExists(atPath: nobody.home))
    }

    @Test func deleteAndUnsetAskOnATerminal() async {
        let ken = await Self.person("Ken Sato")
        var mei = await Self.person(answers: ["n", "y", "2"], interactive: true)
        mei.stdin = Array(await ken("card", "export").out.utf8)
        #expect(await mei("contacts", "add", "-").status == 0)
        let no = await mei("contacts", "delete", "ken")
        #expect(no.status == 1 && no.err == "meishi: error: nothing deleted\n")
        #expect(mei.recorder.questions.last?.hasPrefix("delete Ken Sato (#1, signed) did:key:") == true)
        #expect(await mei("contacts", "delete", "ken").out.hasPrefix("deleted Ken Sato (#1)"))
        #expect(await mei("card", "add", "email", "a@example.org").status == 0)
        #expect(await mei("card", "add", "email", "b@example.org").status == 0)
        #expect(await mei("card", "unset", "email").out == "removed 1 value of email\n")
        #expect(await mei("card", "show", "--json").out.contains("a@example.org"))

        let script = await Self.person()
        #expect(await script("card", "add", "email", "a@example.org").status == 0)
        #expect(await script("card", "add", "email", "b@example.org").status == 0)
        let r = await script("card", "unset", "email")
        #expect(r.status == 64 && r.err.contains("2 email values: \"a@example.org\", \"b@example.org\""))
        var s = script
        s.stdin = Array(await ken("card", "export").out.utf8)
        #expect(await s("contacts", "add", "-").status == 0)
        #expect(await s("contacts", "delete", "1").status == 0, "no terminal: no question")
    }

    /// The next steps printed after init and the first name carry the --home that was given.
    @Test func nextStepsKeepTheHomeGiven() async {
        let mei = InProcess()
        let dir = Fixtures.temporaryDirectory() + "/other home"
        #expect(await mei("init", "--home", dir).out.hasSuffix("next: meishi --home '\(dir)' card set name \"Your Name\"\n"))
        #expect(await mei("--home", dir, "card", "set", "name", "Mei").out.contains("next: meishi --home '\(dir)' card add email"))
        #expect(await mei("--home", dir, "verify", dir + "/identity.json").err.contains("hint: that is a meishi identity file"))
        // Global options first do not hide the command from hints and suggestions.
        #expect(await mei("--home", dir, "crad").err.contains("did you mean 'meishi card'?"))
        #expect(await mei("--home", dir, "contacts", "list", "--limit", "x").err.hasSuffix("hint: see 'meishi contacts list --help'\n"))
    }

    // MARK: Passphrase and identity

    @Test func threeTriesAtAPassphraseAndAWarningForAShortOne() async {
        let mei = InProcess(answers: ["short", "short", "oops", "typo", "short", "a", "b", "c"], interactive: true)
        let created = await mei("init", "--passphrase")
        #expect(created.status == 0 && created.err.contains("warning: the passphrase has 5 characters"), "\(created.err)")
        #expect(await mei("card", "set", "name", "Mei").status == 0)
        let third = await mei("card", "export")
        #expect(third.status == 0, "the third try opens it: \(third.err)")
        #expect(mei.recorder.questions.suffix(2) == ["wrong passphrase, try again (2 of 3): ", "wrong passphrase, try again (3 of 3): "])
        let spent = await mei("card", "export")
        #expect(spent.status == 77 && spent.err.hasPrefix("meishi: error: wrong passphrase for"))
    }

    @Test func passphraseCommandsAndAnEncryptedBackup() async throws {
        var mei = await Self.person()
        let did = await mei("id", "--json").out
        mei.environment["MEISHI_NEW_PASSPHRASE"] = "correct horse battery"
        #expect(await mei("passphrase", "set").status == 0)
        #expect(await mei("id").out.contains("(encrypted)"))
        #expect(await mei("passphrase", "set").status == 64, "already has one")
        mei.environment = ["MEISHI_PASSPHRASE": "correct horse battery", "MEISHI_NEW_PASSPHRASE": "staple"]
        let changed = await mei("passphrase", "change")
        #expect(changed.status == 0 && changed.err.contains("the passphrase has 6 characters"))
        mei.environment = ["MEISHI_PASSPHRASE": "correct horse battery"]
        #expect(await mei("card", "export").status == 77, "the old passphrase no longer opens it")
        mei.environment = ["MEISHI_PASSPHRASE": "staple", "MEISHI_NEW_PASSPHRASE": "backup words here"]
        let backup = Fixtures.temporaryDirectory() + "/backup.json"
        #expect(await mei("id", "export", "-o", backup).status == 0)
        let mode = try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(await mei("passphrase", "remove").status == 0)
        mei.environment = [:]
        #expect(!(await mei("id").out.contains("(encrypted)")))
        #expect(await mei("passphrase", "remove").err == "meishi: error: the secret key has no passphrase: nothing to remove\n"
                + "meishi: hint: it is already stored in the clear; 'meishi passphrase set' adds one\n")
        // An existing backup is never overwritten without --force, and nothing is asked first.
        let before = try Data(contentsOf: URL(fileURLWithPath: backup))
        mei.environment = ["MEISHI_NEW_PASSPHRASE": "other words here"]
        let again = await mei("id", "export", "-o", backup)
        #expect(again.status == 73 && again.err.contains("already exists") && again.err.contains("--force"), "\(again.err)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: backup)) == before)
        let forced = Fixtures.temporaryDirectory() + "/forced.json"
        try Data("old".utf8).write(to: URL(fileURLWithPath: forced))
        #expect(await mei("id", "export", "-o", forced, "--force").status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: forced)) != Data("old".utf8))
        // A dangling link is not followed without --force; with it, a link or the home's own key is refused.
        let dir = Fixtures.temporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: dir + "/link.json", withDestinationPath: dir + "/target.json")
        #expect(await mei("id", "export", "-o", dir + "/link.json").status == 73)
        let viaLink = await mei("id", "export", "-o", dir + "/link.json", "--force")
        #expect(viaLink.status != 0 && viaLink.err.contains("not a regular file"), "\(viaLink.err)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/target.json"))
        let ownKey = await mei("id", "export", "-o", mei.home + "/identity.key", "--force")
        #expect(ownKey.status != 0 && ownKey.err.contains("one of this meishi home's own files"), "\(ownKey.err)")
        #expect(await mei("id").status == 0, "the key is intact")
        // A file that appears after the first check (while passphrases are typed) is not overwritten.
        let late = dir + "/late.json"
        try Data("precious".utf8).write(to: URL(fileURLWithPath: late))
        #expect(throws: MeishiError.self) { try IdentityStore(home: Home(path: mei.home)).writeBackup([1], to: late, replacing: false) }
        #expect(try String(contentsOfFile: late, encoding: .utf8) == "precious")
        mei.environment = [:]
        #expect(await mei("passphrase", "change").status == 64)

        var restored = InProcess()
        restored.environment = ["MEISHI_PASSPHRASE": "wrong"]
        #expect(await restored("init", "--restore", backup).status == 77)
        #expect(!FileManager.default.fileExists(atPath: restored.home + "/identity.key"))
        restored.environment = ["MEISHI_PASSPHRASE": "backup words here"]
        let r = await restored("init", "--restore", backup)
        #expect(r.status == 0 && r.out.hasPrefix("restored identity did:key:"), "\(r.err)")
        #expect(await restored("id", "--json").out == did.replacingOccurrences(of: mei.home, with: restored.home)
            .replacingOccurrences(of: "\"encrypted\" : false", with: "\"encrypted\" : true")
            .replacingOccurrences(of: "\"encrypted\": false", with: "\"encrypted\": true"))
        let keyMode = try FileManager.default.attributesOfItem(atPath: restored.home + "/identity.key")[.posixPermissions] as? Int
        #expect(keyMode == 0o600)
    }

    /// The backup vector of docs/PROTOCOL.md 3.1.1 restores to its DID; a backup whose did was
    /// changed, or an identity.key passed off as a backup, is refused and nothing is written.
    @Test func theBackupVectorRestores() async throws {
        let vector = Fixtures.url("identity/backup-v1.json").path
        let did = try String(contentsOf: Fixtures.url("identity/backup-v1.did"), encoding: .utf8).trimmingCharacters(in: .newlines)
        var mei = InProcess()
        mei.environment = ["MEISHI_PASSPHRASE": "correct horse battery staple"]
        let r = await mei("init", "--restore", vector, "--json")
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.contains("\"did\": \"\(did)\"") && r.out.contains("\"encrypted\": true"))
        #expect(await mei("card", "set", "name", "Mei").status == 0)
        #expect(await mei("card", "export").status == 0, "the restored key signs")

        let text = try String(contentsOfFile: vector, encoding: .utf8)
        let other = try Self.write(text.replacingOccurrences(of: did, with: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"), "other.json")
        var forged = InProcess()
        forged.environment = mei.environment
        let f = await forged("init", "--restore", other)
        #expect(f.status == 65 || f.status == 77, "\(f.err)")
        #expect(!FileManager.default.fileExists(atPath: forged.home + "/identity.key"))
        let keyFile = try Self.write(try String(contentsOfFile: mei.home + "/identity.key", encoding: .utf8), "identity.key")
        #expect(await forged("init", "--restore", keyFile).status == 65)
        #expect(!FileManager.default.fileExists(atPath: forged.home + "/identity.key"))
    }

    /// `init --restore --force` of another person's backup into a home with a card and contacts:
    /// they were the previous person's, so they are set aside with the keys (kept whole, the store
    /// opening with its contacts); restoring the same identity keeps them in place.
    @Test func restoringAnotherPersonsBackupSetsAsideTheirCardAndContacts() async throws {
        var other = await Self.person("Ken Sato")
        other.environment["MEISHI_NEW_PASSPHRASE"] = "other words here"
        let otherBackup = Fixtures.temporaryDirectory() + "/other-backup.json"
        #expect(await other("id", "export", "-o", otherBackup).status == 0)

        var mei = await Self.person()
        let friend = await Self.person("Ann Lee")
        mei.stdin = Array(await friend("card", "export").out.utf8)
        #expect(await mei("contacts", "add", "-").status == 0)
        mei.environment["MEISHI_NEW_PASSPHRASE"] = "mei words here"
        let ownBackup = Fixtures.temporaryDirectory() + "/own-backup.json"
        #expect(await mei("id", "export", "-o", ownBackup).status == 0)

        // The same identity: card and contacts stay.
        mei.environment = ["MEISHI_PASSPHRASE": "mei words here"]
        let same = await mei("init", "--restore", ownBackup, "--force", "--json")
        #expect(same.status == 0 && !same.out.contains("setAside"), "\(same.err)")
        #expect(await mei("contacts", "list").out.contains("Ann Lee"))

        // Another person's: set aside, reported, and the home starts empty for them.
        mei.environment = ["MEISHI_PASSPHRASE": "other words here"]
        let r = await mei("init", "--restore", otherBackup, "--force")
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("the previous identity's card and store (not the restored one's) kept as \(mei.home)/card.json.bak-"))
        #expect(r.err.contains("\(mei.home)/meishi.sqlite.bak-"))
        mei.environment = [:]
        let list = await mei("contacts", "list")
        #expect(!list.out.contains("Ann Lee"), "\(list.out)")
        #expect(!(await mei("card", "show").out.contains("Mei Tanaka")))
        let kept = try FileManager.default.contentsOfDirectory(atPath: mei.home)
        let keptStore = try #require(kept.first { $0.hasPrefix("meishi.sqlite.bak-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") })
        #expect(try String(contentsOfFile: mei.home + "/" + kept.first { $0.hasPrefix("card.json.bak-") }!, encoding: .utf8)
            .contains("Mei Tanaka"))
        let names = try await DatabaseQueue(path: mei.home + "/" + keptStore).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM contact")
        }
        #expect(names == ["Ann Lee"])

        // Without --force, the hint names the restore; Mei's own backup back in: her card and
        // contacts come back from where they were set aside, and the hint-less "no card" note is gone.
        mei.environment = ["MEISHI_PASSPHRASE": "mei words here"]
        let refused = await mei("init", "--restore", ownBackup)
        #expect(refused.err.contains("hint: use 'meishi init --restore \(ownBackup) --force'"), "\(refused.err)")
        let back = await mei("init", "--restore", ownBackup, "--force")
        #expect(back.status == 0 && back.err.contains("brought back this identity's card and store"), "\(back.err)")
        #expect(back.err.contains("the previous identity's store (not the restored one's) kept as"), "Ken had no card here")
        mei.environment = [:]
        #expect(await mei("contacts", "list").out.contains("Ann Lee"))
        #expect(await mei("card", "show").out.contains("Mei Tanaka"))

        // A damaged backup is named as such; a backup sealed under an empty passphrase gives a key
        // stored without one.
        let junk = try Self.write("{\"format\":\"meishi-identity-backup-v1\",\"did\":\"did:key:z6Mkx\"}", "junk.json")
        let damaged = await mei("init", "--restore", junk, "--force")
        #expect(damaged.status == 65 && damaged.err.contains("this backup is damaged or was not made by 'meishi id export'"),
                "\(damaged.err)")
        let emptySealed = try IdentityStore(home: Home(path: other.home)).backup(
            passphrases: NoPassphraseHere(), backupPassphrase: SecureBytes(copying: []), now: 1_800_000_000, limits: .interactive)
        let emptyFile = try Self.write(String(decoding: emptySealed, as: UTF8.self), "empty-pass.json")
        var fresh = InProcess()
        fresh.environment = ["MEISHI_PASSPHRASE": ""]
        let r2 = await fresh("init", "--restore", emptyFile, "--json")
        #expect(r2.status == 0 && r2.out.contains("\"encrypted\": false"), "\(r2.out) \(r2.err)")
    }

    /// No `-o` replaces the home's own files (a card written over identity.key would lose the key
    /// for good), whatever the spelling; a hand-edited card.json holding what `card set` refuses
    /// is not signed; a document written to a terminal has others' escapes escaped.
    @Test func outputsNeverReplaceTheHomesFilesAndDocumentsAreEscapedOnATerminal() async throws {
        var mei = await Self.person()
        let key = try Data(contentsOf: URL(fileURLWithPath: mei.home + "/identity.key"))
        for args in [["card", "qr", "--format", "png", "-o", mei.home + "/identity.key"],
                     ["card", "export", "-o", mei.home + "/../home/identity.json"],
                     ["contacts", "export", "-o", mei.home + "/card.json"],
                     ["card", "qr", "--format", "text", "-o", mei.home + "/meishi.sqlite"]] {
            let r = await mei.run(args)
            #expect(r.status != 0 && r.err.contains("one of this meishi home's own files"), "\(args): \(r.err)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: mei.home + "/identity.key")) == key)
        let show = await mei("card", "show"), id = await mei("id")
        #expect(show.status == 0 && id.status == 0)

        // A contact whose card holds escapes (signed by a forged card, as a peer could): a vCard
        // holds no control character (issue 21), on a terminal or to a pipe.
        mei.stdin = PeerTextEndToEndTests.forged([.name: .single("Ed \u{1B}]0;HACKED\u{7}\u{1B}[2J\u{202E}owT")]).canonicalJSON
        #expect(await mei("contacts", "add", "-").status == 0)
        var onTerminal = mei
        onTerminal.outputTerminal = (80, 30)
        let shown = await onTerminal("contacts", "export")
        #expect(!shown.out.contains("\u{1B}") && shown.out.contains("FN:Ed ]0\\;HACKED[2J") && shown.out.contains("BEGIN:VCARD"), "\(shown.out)")
        let piped = await mei("contacts", "export").out
        #expect(!piped.contains("\u{1B}") && !piped.contains("\u{7}") && piped.contains("FN:Ed ]0\\;HACKED[2J\u{202E}owT"), "\(piped)")

        // card.json edited by hand to hold a control character: refused, not signed.
        let cardPath = mei.home + "/card.json"
        let card = try String(contentsOfFile: cardPath, encoding: .utf8)
        try card.replacingOccurrences(of: "Mei Tanaka", with: "Mei\\u001b[31mRed").write(toFile: cardPath, atomically: true, encoding: .utf8)
        let export = await mei("card", "export")
        #expect(export.status == 65 && export.err.contains("it holds what 'meishi card set' refuses") && export.out.isEmpty, "\(export.err)")
        // In words, never a Swift enum case, and the same field each time for the same file (the
        // fields were checked in a dictionary's order: "name" one run, "title" the next).
        let both = try String(contentsOfFile: cardPath, encoding: .utf8)
            .replacingOccurrences(of: "\"fields\" : {", with: "\"fields\" : {\"title\": [{\"level\": \"public\", \"value\": \"Boss\\u0007\"}],")
        try both.write(toFile: cardPath, atomically: true, encoding: .utf8)
        for _ in 0..<6 {  // separate processes: each hashes with another seed
            let shown = try CLI(home: mei.home)("card", "show")
            #expect(shown.status == 65 && shown.stderr.contains("refuses: name contains a control or bidi-override character")
                    && !shown.stderr.contains("controlCharacter"), "\(shown.stderr)")
        }
    }

    // MARK: Help

    @Test func everyHelpShowsAnExample() {
        for (path, type) in HelpSnapshotTests.paths() {
            #expect(Meishi.helpMessage(for: type, columns: 100).contains("Example"), "meishi \(path.joined(separator: " ")) --help")
        }
    }
}

/// The generated bash completion, sourced in a real bash: file names where a file goes, field
/// names for `card set/add/unset`, contact names from the store for a REF.
@Suite struct BashCompletionTests {
    @Test func completionsCompleteFilesFieldsAndContacts() throws {
        guard FileManager.default.isExecutableFile(atPath: "/bin/bash") else { return }
        let cli = try CLI.withCard()
        let ken = CLI()
        try #require(try ken("init").status == 0)
        try #require(try ken("card", "set", "name", "Ken Sato").status == 0)
        let card = try cli.file("ken.json", try ken.export())
        try #require(try cli("contacts", "add", card).status == 0)
        let dir = Fixtures.temporaryDirectory()
        for f in ["photo.png", "notes.txt"] { FileManager.default.createFile(atPath: dir + "/" + f, contents: Data()) }
        let script = try cli.run(["--generate-completion-script", "bash"]).stdout
        #expect(script.contains("complete -o filenames -F _meishi meishi"))
        let scriptPath = dir + "/meishi.bash"
        try script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let driver = """
            source \(scriptPath)
            comp() { COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$*"; [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
                     COMP_CWORD=$((${#COMP_WORDS[@]}-1)); COMPREPLY=(); _meishi meishi "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
                     printf '%s|' "${COMPREPLY[@]}"; echo; }
            complete -p meishi
            comp meishi scan ph
            comp meishi card export -o no
            comp meishi card set em
            comp meishi card unset ""
            comp meishi contacts show K
            comp meishi send K
            comp meishi exchange --code 7-aardv
            comp meishi exchange --code 7-aardvark-adv
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/bash")
        p.arguments = ["-c", driver]
        p.currentDirectoryURL = URL(fileURLWithPath: dir)
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = cli.home
        env["PATH"] = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").map(String.init)
        p.waitUntilExit()
        try #require(lines.count == 9, "\(lines)")
        #expect(lines[0] == "complete -o filenames -F _meishi meishi")
        #expect(lines[1] == "photo.png|")
        #expect(lines[2] == "notes.txt|")
        #expect(lines[3] == "email|")
        #expect(lines[4] == "name|title|org|email|phone|url|address|note|")
        #expect(lines[5] == "Ken Sato|")
        #expect(lines[6] == "Ken Sato|", "send completes contact names as contacts show does")
        #expect(lines[7] == "7-aardvark|", "--code completes the first word from the even words")
        #expect(lines[8] == "7-aardvark-adviser|", "and the second from the odd words")
    }
}

/// Identity backups checked by tools/verify-backup.py: Argon2id and ChaCha20-Poly1305 from Python
/// `cryptography`, HChaCha20 in plain Python, written from docs/PROTOCOL.md 3.1.1 alone.
@Suite struct BackupInteropTests {
    static let python = CLI.venvPython(importing: "cryptography, base58")

    static func check(_ path: String, _ passphrase: String) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python!)
        p.arguments = [Fixtures.root.appendingPathComponent("tools/verify-backup.py").path, path, passphrase]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text.trimmingCharacters(in: .newlines))
    }

    @Test(.enabled(if: python != nil, "skipped: needs .venv with cryptography and base58 (scripts/python-tools.sh)"))
    func backupsOpenElsewhere() async throws {
        let did = try String(contentsOf: Fixtures.url("identity/backup-v1.did"), encoding: .utf8).trimmingCharacters(in: .newlines)
        let vector = Fixtures.url("identity/backup-v1.json").path
        #expect(try Self.check(vector, "correct horse battery staple") == (0, did))
        #expect(try Self.check(vector, "correct horse battery stapler").status == 1)
        var mei = InProcess()
        #expect(await mei("init").status == 0)
        mei.environment = ["MEISHI_NEW_PASSPHRASE": "two words"]
        let backup = Fixtures.temporaryDirectory() + "/b.json"
        #expect(await mei("id", "export", "-o", backup).status == 0)
        let fresh = await mei("id", "--json").out
        let checked = try Self.check(backup, "two words")
        #expect(checked.status == 0 && fresh.contains("\"did\": \"\(checked.out)\""), "\(checked)")
    }
}

/// A key with no passphrase, opened in a test.
struct NoPassphraseHere: PassphraseSource {
    func passphrase(forKeyAt path: String) -> SecureBytes? { nil }
    func newPassphrase() throws(MeishiError) -> SecureBytes? { nil }
}
