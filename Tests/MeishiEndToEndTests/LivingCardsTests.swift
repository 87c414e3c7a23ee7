import Foundation
import Testing
@testable import meishi

/// Issue 26 "Living cards", as a person meets it: contacts remember where and how we met.
@Suite struct LivingCardsTests {
    /// Mei's card, exported at Mei's time, for Ken to add.
    static func meisCard(_ mei: inout InProcess) async -> String {
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        #expect(await mei("card", "add", "email", "mei@example.org").status == 0)
        return await mei("card", "export").out
    }

    /// Mei (her clock) and Ken holding her card as contact #1, 10 s later.
    static func kenHoldingMeisCard() async -> (InProcess, InProcess) {
        var mei = InProcess()
        let card = await meisCard(&mei)
        var ken = InProcess()
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("init").status == 0)
        ken.stdin = Array(card.utf8)
        #expect(await ken("contacts", "add", "-").status == 0)
        return (mei, ken)
    }

    /// `--event` wins over MEISHI_EVENT, which wins over the configuration file's `event`;
    /// `contacts show` lists the meetings (text and JSON), `contacts list --event` filters.
    @Test func meetingsRememberTheEvent() async throws {
        var mei = InProcess()
        let first = await Self.meisCard(&mei)
        var ken = InProcess()
        let configHome = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: configHome + "/meishi", withIntermediateDirectories: true)
        try "event = \"Config Con\"\n".write(toFile: configHome + "/meishi/config", atomically: true, encoding: .utf8)
        ken.environment["XDG_CONFIG_HOME"] = configHome
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("init").status == 0)
        ken.stdin = Array(first.utf8)
        ken.environment["MEISHI_EVENT"] = "RubyKaigi"
        let added = await ken("contacts", "add", "-", "--event", "PyCon JP 2026")
        #expect(added.status == 0, "\(added.err)")
        ken.now = ken.now.addingTimeInterval(3600)
        #expect(await ken("contacts", "add", "-").status == 0)
        ken.environment["MEISHI_EVENT"] = nil
        ken.now = ken.now.addingTimeInterval(3600)
        #expect(await ken("contacts", "add", "-").status == 0)
        let shown = await ken("contacts", "show", "Mei")
        #expect(shown.out.hasSuffix("""
            met:
              2027-01-15 08:00 from a file, at PyCon JP 2026
              2027-01-15 09:00 from a file, at RubyKaigi
              2027-01-15 10:00 from a file, at Config Con

            """), "\(shown.out)")
        let json = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "show", "Mei", "--json").out.utf8)) as? [String: Any]
        let meetings = try #require(json?["meetings"] as? [[String: Any]])
        #expect(meetings.map { $0["event"] as? String } == ["PyCon JP 2026", "RubyKaigi", "Config Con"])
        #expect(meetings.map { $0["how"] as? String } == ["file", "file", "file"])
        #expect(meetings.first?["at"] as? String == "2027-01-15T08:00:10Z")
        // Filtering: part of the name, any case; nothing else matches.
        #expect(await ken("contacts", "list", "--event", "pycon").out.contains("Mei Tanaka"))
        let none = await ken("contacts", "list", "--event", "JSConf")
        #expect(none.status == 0 && !none.out.contains("Mei") && none.err.contains("no contacts match"), "\(none)")
        // An empty --event is a usage error (it listed everyone); MEISHI_EVENT set empty records
        // no event, the configuration's included.
        #expect(await ken("contacts", "list", "--event", "").status == 64)
        ken.environment["MEISHI_EVENT"] = ""
        ken.now = ken.now.addingTimeInterval(3600)
        #expect(await ken("contacts", "add", "-").status == 0)
        let last = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "show", "Mei", "--json").out.utf8)) as? [String: Any]
        let all = try #require(last?["meetings"] as? [[String: Any]])
        #expect(all.count == 4 && all.last?["event"] == nil, "\(all)")
    }

    /// An event that cannot be recorded is refused before anything is stored: from the flag and
    /// the environment exit 64, from the configuration file exit 78 with its line.
    @Test func aBadEventIsRefused() async throws {
        var mei = InProcess()
        let card = await Self.meisCard(&mei)
        var ken = InProcess()
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("init").status == 0)
        ken.stdin = Array(card.utf8)
        let empty = await ken("contacts", "add", "-", "--event", " ")
        #expect(empty.status == 64 && empty.err.contains("--event must be 1 to 200 bytes of text on one line"), "\(empty)")
        let long = await ken("contacts", "add", "-", "--event", String(repeating: "x", count: 201))
        #expect(long.status == 64, "\(long)")
        ken.environment["MEISHI_EVENT"] = "line\u{1b}[2Jtwo"
        let env = await ken("contacts", "add", "-")
        #expect(env.status == 64 && env.err.contains("MEISHI_EVENT must be"), "\(env)")
        #expect(!env.err.contains("\u{1b}"))
        ken.environment["MEISHI_EVENT"] = nil
        let configHome = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: configHome + "/meishi", withIntermediateDirectories: true)
        try "\nevent = \"a\\nb\"\n".write(toFile: configHome + "/meishi/config", atomically: true, encoding: .utf8)
        ken.environment["XDG_CONFIG_HOME"] = configHome
        let config = await ken("contacts", "add", "-")
        #expect(config.status == 78 && config.err.contains("line 2: 'event' must be 1 to 200 bytes"), "\(config)")
        ken.environment["XDG_CONFIG_HOME"] = Fixtures.temporaryDirectory()
        let listed = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "list", "--json").out.utf8)) as? [String: Any]
        #expect((listed?["contacts"] as? [Any])?.isEmpty == true, "a refused add stored the card")
    }

    /// An exchange records `exchange` (digits) on both sides with each side's own event; a
    /// scanned QR code records `qr`; an import records `import` once per card it changed.
    @Test func exchangeScanAndImportRecordMeetings() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let (listener, port, _, _) = try ExchangeCommandTests.startListener(mei, ["--timeout", "60", "--event", "Listener Fest"])
        let dial = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes", "--event", "PyCon JP 2026"])
        listener.waitUntilExit()
        #expect(dial.status == 0 && listener.terminationStatus == 0, "\(dial.stderr)")
        func meetings(_ cli: CLI, _ ref: String) throws -> [[String: Any]] {
            try #require(try cli("contacts", "show", ref, "--json").json["meetings"] as? [[String: Any]])
        }
        #expect(try meetings(ken, "Mei").map { $0["how"] as? String } == ["exchange"])
        #expect(try meetings(ken, "Mei").first?["event"] as? String == "PyCon JP 2026")
        #expect(try meetings(mei, "Ken").first?["event"] as? String == "Listener Fest")
        #expect(try ken("contacts", "show", "Mei").stdout.contains(" by exchange, at PyCon JP 2026\n"))

        let png = (ken.home as NSString).deletingLastPathComponent + "/mei-qr.png"
        try #require(try mei("card", "qr", "-o", png).status == 0)
        let fay = try CLI.withCard(name: "Fay Lin", email: "fay@example.org")
        let scanned = try fay("scan", png, "--event", "Hallway")
        #expect(scanned.status == 0, "\(scanned.stderr)")
        #expect(try meetings(fay, "Mei").map { $0["how"] as? String } == ["qr"])
        #expect(try meetings(fay, "Mei").first?["event"] as? String == "Hallway")

        let vcf = try fay.file("friends.vcf", Data("BEGIN:VCARD\nVERSION:4.0\nFN:Vee Park\nEMAIL:vee@example.org\nEND:VCARD\n".utf8))
        #expect(try fay("contacts", "import", vcf).status == 0)
        #expect(try fay("contacts", "import", vcf).status == 0)
        #expect(try meetings(fay, "Vee").map { $0["how"] as? String } == ["import"])
        #expect(try fay("contacts", "show", "Vee", "--json").json["source"] as? String == "vcard")
    }

    /// My own note and tags: set, shown (escaped), filtered by, kept over a newer card, exported
    /// only with --with-notes, never in a share; bad ones refused with nothing stored.
    @Test func myOwnWordsStayMine() async throws {
        var (mei, ken) = await Self.kenHoldingMeisCard()
        #expect(await ken("contacts", "note", "1").err.contains("no note on Mei Tanaka (#1)"))
        let noted = await ken("contacts", "note", "Mei", "met at the booth\nwants the slides \u{1b}[31m")
        #expect(noted.status == 64, "a control character is refused: \(noted)")
        let saved = await ken("contacts", "note", "Mei", "met at the booth\nwants the slides")
        #expect(saved.out == "saved your note on Mei Tanaka (#1) (33 characters; never shared)\n", "\(saved)")
        #expect(await ken("contacts", "note", "1").out == "met at the booth\nwants the slides\n")
        #expect(await ken("contacts", "note", "1", " ").status == 64)
        #expect(await ken("contacts", "tag", "1", "pycon", "Investor", "PyCon").out == "Mei Tanaka (#1): tags pycon, Investor\n")
        #expect(await ken("contacts", "tag", "1", "a,b").status == 64)
        let emptyTag = await ken("contacts", "tag", "1", "")
        #expect(emptyTag.status == 64 && emptyTag.err.contains("a tag cannot be empty\n"), "no colon with nothing after it: \(emptyTag.err)")
        #expect(await ken("contacts", "tag", "1", "--untag", "INVESTOR").out == "Mei Tanaka (#1): tags pycon\n")
        #expect(await ken("contacts", "list", "--tag", "PYCON").out.contains("Mei Tanaka"))
        #expect(await ken("contacts", "list", "--tag", "investor").err.contains("no contacts match"))
        // A newer card rewrites the contact's row: my words stay.
        mei.now = mei.now.addingTimeInterval(60)
        #expect(await mei("card", "set", "title", "Lead").status == 0)
        ken.stdin = Array(await mei("card", "export").out.utf8)
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("contacts", "add", "-").out.hasPrefix("updated Mei Tanaka"))
        let shown = await ken("contacts", "show", "1")
        #expect(shown.out.contains("\nyour tags: pycon\nyour note (never shared):\n  met at the booth\n  wants the slides\n"), "\(shown.out)")
        let json = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "show", "1", "--json").out.utf8)) as? [String: Any]
        #expect(json?["tags"] as? [String] == ["pycon"] && json?["note"] as? String == "met at the booth\nwants the slides")
        // Exports carry them only when asked; a share never.
        let plain = await ken("contacts", "export")
        #expect(!plain.out.contains("booth") && !plain.out.contains("CATEGORIES"), "\(plain.out)")
        #expect(!(await ken("contacts", "export", "--format", "json").out.contains("booth")))
        let withNotes = await ken("contacts", "export", "--with-notes")
        #expect(withNotes.out.contains("NOTE;X-MEISHI-OWN=true:met at the booth\\nwants the slides\r\n")
                && withNotes.out.contains("CATEGORIES;X-MEISHI-OWN=true:pycon\r\n"),
                "\(withNotes.out)")
        #expect(await ken("contacts", "export", "--with-notes", "--format", "json").out.contains("\"pycon\""))
        let share = await ken("contacts", "share", "1")
        #expect(share.status == 0 && !share.out.contains("booth") && !share.out.contains("pycon"), "\(share)")
        // Standard input, then --delete.
        ken.stdin = Array("from stdin\n".utf8)
        #expect(await ken("contacts", "note", "1", "-").status == 0)
        #expect(await ken("contacts", "note", "1").out == "from stdin\n")
        #expect(await ken("contacts", "note", "1", "--delete").out == "removed your note on Mei Tanaka (#1)\n")
        #expect(await ken("contacts", "note", "1").out.isEmpty)
    }

    /// "first seen … via" names how the contact was first seen, not how its latest card came (a
    /// push made it say "first seen <the exchange's time> via push"); text and JSON.
    @Test func firstSeenKeepsItsSource() async throws {
        var (mei, ken) = await Self.kenHoldingMeisCard()
        mei.now = mei.now.addingTimeInterval(60)
        #expect(await mei("card", "set", "title", "Lead").status == 0)
        let file = Fixtures.temporaryDirectory() + "/newer.json"
        try Data(await mei("card", "export").out.utf8).write(to: URL(fileURLWithPath: file))
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("contacts", "add", file).out.hasPrefix("updated Mei Tanaka"))
        let shown = await ken("contacts", "show", "1").out
        #expect(shown.contains("first seen   2027-01-15T08:00:10Z via stdin\n"), "\(shown)")
        #expect(shown.contains("(latest card via file)"), "\(shown)")
        let json = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "show", "1", "--json").out.utf8)) as? [String: Any]
        #expect(json?["firstSource"] as? String == "stdin" && json?["source"] as? String == "file", "\(json ?? [:])")
    }

    /// My own note and tags in `contacts export --with-notes` are marked as mine and read back as
    /// mine: the same home changes nothing (before, the note became the card's NOTE, merged as
    /// unsigned information, which a plain export then shared); a fresh home gets them as my note
    /// and tags, never as the contact's values, even beside a card's own note.
    @Test func myOwnExportReadsBackAsMine() async throws {
        var (mei, ken) = await Self.kenHoldingMeisCard()
        mei.now = mei.now.addingTimeInterval(60)
        #expect(await mei("card", "set", "note", "card note from Mei", "--level", "public").status == 0)
        ken.stdin = Array(await mei("card", "export").out.utf8)
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("contacts", "add", "-").status == 0)
        #expect(await ken("contacts", "note", "1", "my private note").status == 0)
        #expect(await ken("contacts", "tag", "1", "pycon", "investor").status == 0)
        let file = await ken("contacts", "export", "--with-notes").out
        #expect(file.contains("\r\nNOTE:card note from Mei\r\n") && file.contains("\r\nNOTE;X-MEISHI-OWN=true:my private note\r\n"), "\(file)")
        ken.stdin = Array(file.utf8)
        let again = await ken("contacts", "import", "-")
        #expect(again.status == 0 && again.out.contains("0 imported, 0 merged, 1 skipped"), "\(again)")
        let plain = await ken("contacts", "export").out
        #expect(!plain.contains("private") && !plain.contains("pycon"), "\(plain)")
        let shown = try JSONSerialization.jsonObject(with: Data(await ken("contacts", "show", "1", "--json").out.utf8)) as? [String: Any]
        #expect((shown?["fields"] as? [String: [String]])?["note"] == ["card note from Mei"], "\(shown ?? [:])")
        // A fresh home: my note and tags come back as mine.
        var fresh = InProcess()
        #expect(await fresh("init").status == 0)
        fresh.stdin = Array(file.utf8)
        #expect(await fresh("contacts", "import", "-").status == 0)
        let back = try JSONSerialization.jsonObject(with: Data(await fresh("contacts", "show", "1", "--json").out.utf8)) as? [String: Any]
        #expect(back?["note"] as? String == "my private note" && back?["tags"] as? [String] == ["pycon", "investor"], "\(back ?? [:])")
        #expect((back?["fields"] as? [String: [String]])?["note"] == ["card note from Mei"], "\(back ?? [:])")
        #expect(!(await fresh("contacts", "export").out.contains("private")))
        // My note is not replaced by an older one from a file.
        #expect(await fresh("contacts", "note", "1", "newer words").status == 0)
        fresh.stdin = Array(file.utf8)
        #expect(await fresh("contacts", "import", "-").status == 0)
        #expect(await fresh("contacts", "note", "1").out == "newer words\n")
    }

    /// Values an export writes without some characters (a control character in a stranger's
    /// title) read back as the values held: meishi's own export is not "unsigned information".
    @Test func valuesTheExportCleanedAreHeld() async throws {
        var home = InProcess()
        #expect(await home("init").status == 0)
        home.stdin = Array("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Eve Stranger\r\nTITLE:Boss\u{1b}[31m\r\nEMAIL:eve@example.org\r\nX-MEISHI-AA:a\u{7}b\r\nEND:VCARD\r\n".utf8)
        #expect(await home("contacts", "import", "-").status == 0)
        home.stdin = Array(await home("contacts", "export").out.utf8)
        let again = await home("contacts", "import", "-")
        #expect(again.status == 0 && again.out.contains("0 imported, 0 merged, 1 skipped"), "\(again)")
    }

    /// Trial 7, F12: `card set` took values until no share could carry the card, and `exchange`
    /// found out after the code had matched (a try spent, a Swift enum in the message). The
    /// value that makes the public share too big is refused (65, the size, a hint, the card as
    /// it was), and `exchange` signs its share before the network and stops at once.
    @Test func aCardTooBigToShareIsRefusedBeforeTheNetwork() async throws {
        var big = InProcess()
        #expect(await big("init").status == 0)
        #expect(await big("card", "set", "name", "Big Card").status == 0)
        let value = String(repeating: "é", count: 128)
        var refused: (status: Int32, out: String, err: String)?
        for n in 1...70 {
            let r = await big("card", "set", "x-f\(n)", value, "--level", "public")
            if r.status != 0 { refused = (r.status, r.out, r.err); break }
        }
        let r = try #require(refused, "70 values of 256 bytes were all accepted")
        #expect(r.status == 65, "\(r)")
        #expect(r.err.contains("your card's public share would be") && r.err.contains("over the 16384-byte limit")
                && r.err.contains("your card is unchanged") && r.err.contains("meishi: hint: "), "\(r.err)")
        #expect(await big("card", "export").status == 0, "the card kept is still shareable")
        // A card made too big by hand (an older meishi let it be): exchange stops before dialling.
        let cardPath = big.home + "/card.json"
        var card = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cardPath))) as! [String: Any]
        var fields = card["fields"] as! [String: Any]
        for n in 1...5 { fields["x-g\(n)"] = [["value": value, "level": "public"]] }
        card["fields"] = fields
        try JSONSerialization.data(withJSONObject: card).write(to: URL(fileURLWithPath: cardPath))
        #expect(await big("card", "export").status == 65)
        let x = await big("exchange", "--code", "7-crossover-clockwork", "--peer", "127.0.0.1:1", "--timeout", "20s")
        #expect(x.status == 65 && x.err.contains("over the 16384-byte limit") && x.err.contains("meishi: hint: share fewer fields"), "\(x)")
        #expect(!x.err.contains("shareTooLarge") && !x.err.contains("connect"), "\(x.err)")
    }

    /// Trial 7, F19 and F23: `contacts list --tag/--event` ignored case for ASCII letters only
    /// (while tags' de-duplication and --untag fold every letter), and `contacts search` found a
    /// phone only by the digits as the contact typed them, not by its E.164 or national form.
    @Test func tagsEventsAndPhonesAreFoundAsPeopleTypeThem() async throws {
        var mei = InProcess()
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        #expect(await mei("card", "add", "phone", "+81 90 1234 5678").status == 0)
        let card = await mei("card", "export").out
        var ken = InProcess()
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("init").status == 0)
        ken.stdin = Array(card.utf8)
        #expect(await ken("contacts", "add", "-", "--event", "Über Fest").status == 0)
        #expect(await ken("contacts", "tag", "1", "Ünï").status == 0)
        for (option, text) in [("--tag", "ünï"), ("--tag", "ÜNÏ"), ("--tag", "Ünï"), ("--event", "über"), ("--event", "ÜBER FEST")] {
            let r = await ken("contacts", "list", option, text)
            #expect(r.status == 0 && r.out.contains("Mei Tanaka"), "\(option) \(text): \(r)")
        }
        #expect(!(await ken("contacts", "list", "--tag", "uni").out.contains("Mei Tanaka")))
        for query in ["+819012345678", "819012345678", "090-1234-5678", "(090) 1234 5678", "+81 90 1234", "1234 5678"] {
            let r = await ken("contacts", "search", query)
            #expect(r.status == 0 && r.out.contains("Mei Tanaka"), "\(query): \(r)")
        }
        for query in ["090-9999-5678", "+44 90 1234 5678"] {
            #expect(!(await ken("contacts", "search", query).out.contains("Mei Tanaka")), "\(query)")
        }
    }

    /// `contacts edit` runs the editor on a tags line and the note, checks the saved text, reopens
    /// on a mistake and refuses one left unchanged; an empty file cancels.
    @Test func contactsEditChecksOnSave() async throws {
        var (_, ken) = await Self.kenHoldingMeisCard()
        #expect(await ken("contacts", "tag", "1", "pycon").status == 0)
        let opened = Opened()
        ken.editor = { _, path, _ in
            let text = try String(contentsOfFile: path, encoding: .utf8)
            opened.texts.append(text)
            let edited = opened.texts.count == 1 ? text.replacingOccurrences(of: "tags: pycon", with: "tagz: pycon")
                : text.replacingOccurrences(of: "tagz: pycon", with: "tags: pycon, friend") + "first line\n\n# kept: the note's own line\n"
            try edited.write(toFile: path, atomically: false, encoding: .utf8)
            return 0
        }
        let edited = await ken("contacts", "edit", "Mei")
        #expect(edited.status == 0, "\(edited.err)")
        #expect(opened.texts.count == 2 && opened.texts[0].contains("\ntags: pycon\nnote:\n"))
        #expect(opened.texts[1].hasPrefix("# error: line 5: expected 'tags: A, B' or 'note:'"), "\(opened.texts)")
        #expect(edited.out == "saved your note and tags on Mei Tanaka (#1): tags pycon, friend, a note of 39 characters\n", "\(edited.out)")
        #expect(await ken("contacts", "note", "1").out == "first line\n\n# kept: the note's own line\n")
        // The same mistake twice: nothing saved, exit 65.
        ken.editor = { _, path, _ in
            try "tags: a,, b\nnote:\n\u{7}bell\n".write(toFile: path, atomically: false, encoding: .utf8)
            return 0
        }
        let refused = await ken("contacts", "edit", "1")
        #expect(refused.status == 65 && refused.err.contains("note and tags not saved: line 2: the note holds a control character"), "\(refused)")
        // Trial 7, F11: the reopened file left as it was (vi's :q!): the error names the line the
        // warning named (it counted the "# error:" line put on top).
        ken.editor = { _, path, _ in
            if try !String(contentsOfFile: path, encoding: .utf8).hasPrefix("# error:") {
                try "tags: a\nnot a line of this form\nnote:\n".write(toFile: path, atomically: false, encoding: .utf8)
            }
            return 0
        }
        let quit = await ken("contacts", "edit", "1")
        #expect(quit.status == 65 && quit.err.contains("warning: line 2: ") && quit.err.contains("not saved: line 2: "), "\(quit.err)")
        ken.editor = { _, path, _ in
            try "# nothing\n\n".write(toFile: path, atomically: false, encoding: .utf8)
            return 0
        }
        let cancelled = await ken("contacts", "edit", "1")
        #expect(cancelled.status == 1 && cancelled.err.contains("contacts edit cancelled"), "\(cancelled)")
        #expect(await ken("contacts", "show", "1").out.contains("your tags: pycon, friend\n"))
    }

    /// Meetings, notes and tags move with `backup` and `restore`.
    @Test func meetingsNotesAndTagsSurviveBackupAndRestore() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let mei = try CLI.withCard()
        let card = try ken.file("mei.json", try mei.export())
        #expect(try ken("contacts", "add", card, "--event", "PyCon JP 2026").status == 0)
        #expect(try ken("contacts", "note", "Mei", "owes me a coffee").status == 0)
        #expect(try ken("contacts", "tag", "Mei", "pycon").status == 0)
        let before = try ken("contacts", "show", "Mei", "--json").stdout
        let file = HomeBackupTests.scratch(ken) + "/ken.backup"
        #expect(try ken.run(["backup", "-o", file], extraEnvironment: HomeBackupTests.passphrase).status == 0)
        let moved = CLI(home: Fixtures.temporaryDirectory() + "/moved/home")
        let r = try moved.run(["restore", file], extraEnvironment: HomeBackupTests.passphrase)
        #expect(r.status == 0, "\(r.stderr)")
        let after = try moved("contacts", "show", "Mei", "--json").stdout
        #expect(after == before)
        #expect(after.contains("owes me a coffee") && after.contains("PyCon JP 2026") && after.contains("\"pycon\""), "\(after)")
    }
}

/// What an editor closure saw, in order.
private final class Opened: @unchecked Sendable {
    var texts: [String] = []
}
