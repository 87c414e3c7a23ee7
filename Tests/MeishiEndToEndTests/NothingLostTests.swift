import Foundation
import Testing
@testable import meishi

/// Issue 21 "Nothing lost", the store's part, as a new user meets it: imports merge the same
/// person only and a merge can be undone; a newer card that shares less erases nothing and the
/// output says what changed; `card set` never silently replaces several values.
@Suite struct NothingLostTests {
    static let family = """
        BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice Smith\r\nN:Smith;Alice;;;\r\nEMAIL:alice@smith.example\r\nTEL;TYPE=HOME:+1 555 0100\r\nEND:VCARD\r
        BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bob Smith\r\nN:Smith;Bob;;;\r\nEMAIL:bob@smith.example\r\nTEL;TYPE=HOME:+1 555 0100\r\nEND:VCARD\r\n
        """

    /// Seen 1: "merged Bob Smith into #1 Alice Smith (email +1)", and the export held two N
    /// lines under FN:Alice Smith. Bob is now his own contact, and the import says why.
    @Test func theFamilyFileKeepsBobApart() throws {
        let cli = try CLI.initialised()
        let file = try cli.file("family.vcf", Data(Self.family.utf8))
        let dry = try cli("contacts", "import", "--dry-run", file)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("would import Bob Smith as #2 (unsigned): kept apart (another name): shares phone +1 555 0100 with #1 Alice Smith"),
                "\(dry.stdout)")
        #expect((try cli("contacts", "list", "--json").json["contacts"] as? [Any])?.isEmpty == true, "a dry run stored something")
        let r = try cli("contacts", "import", "--json", file)
        #expect(r.status == 0, "\(r.stderr)")
        let cards = try #require(r.json["cards"] as? [[String: Any]])
        #expect(cards.map { $0["result"] as? String } == ["imported", "imported"])
        let shares = try #require(cards[1]["sharesWith"] as? [[String: Any]])
        #expect(shares.first?["field"] as? String == "phone" && shares.first?["id"] as? Int == 1 && shares.first?["name"] as? String == "Alice Smith")
        let export = try cli("contacts", "export")
        #expect(export.stdout.components(separatedBy: "BEGIN:VCARD").count == 3)
        for card in export.stdout.components(separatedBy: "BEGIN:VCARD").dropFirst() {
            #expect(card.components(separatedBy: "\nN:").count <= 2, "two N lines: \(card)")
        }
        // Importing the family again merges each into themselves: nothing new, nothing mixed.
        let again = try cli("contacts", "import", file)
        #expect(again.stdout.contains("0 imported, 0 merged, 2 skipped"), "\(again.stdout)")
    }

    /// Two colleagues whose cards both carry info@acme.example stay two contacts.
    @Test func colleaguesSharingAnAddressStayTwo() throws {
        let cli = try CLI.initialised()
        let file = try cli.file("acme.vcf", Data("""
            BEGIN:VCARD\nVERSION:4.0\nFN:Dana Lee\nEMAIL:info@acme.example\nEMAIL:dana@acme.example\nEND:VCARD
            BEGIN:VCARD\nVERSION:4.0\nFN:Eli Ortiz\nEMAIL:info@acme.example\nEND:VCARD\n
            """.utf8))
        let r = try cli("contacts", "import", file)
        #expect(r.stdout.contains("imported Eli Ortiz as #2 (unsigned): kept apart (another name): shares email info@acme.example with #1 Dana Lee"),
                "\(r.stdout)")
        #expect(!r.stderr.contains("impersonat"), "\(r.stderr)")
        #expect((try cli("contacts", "list", "--json").json["contacts"] as? [Any])?.count == 2)
    }

    /// The same person's second card merges (the same name, a shared phone), `--dry-run` says
    /// why, and `contacts split` undoes it; a merge it has no record of is refused in words.
    @Test func aMergeOfTheSamePersonAndItsUndoing() throws {
        let cli = try CLI.initialised()
        let first = try cli.file("a.vcf", Data("BEGIN:VCARD\nVERSION:3.0\nFN:Alice Smith\nTEL:+1 555 0100\nEND:VCARD\n".utf8))
        let second = try cli.file("b.vcf", Data("BEGIN:VCARD\nVERSION:3.0\nFN:alice smith\nTEL:+1 555 0100\nEMAIL:alice@work.example\nEND:VCARD\n".utf8))
        #expect(try cli("contacts", "import", first).status == 0)
        let dry = try cli("contacts", "import", "--dry-run", second)
        #expect(dry.stdout.contains("would merge alice smith into #1 Alice Smith (email +1): the same name and a shared email or phone"),
                "\(dry.stdout)")
        #expect(try cli("contacts", "import", second).stdout.contains("merged alice smith into #1 Alice Smith (email +1)"))
        let split = try cli("contacts", "split", "Alice")
        #expect(split.status == 0, "\(split.stderr)")
        #expect(split.stdout == "split alice smith out of #1 Alice Smith (email -1): now #2 (unsigned)\n", "\(split.stdout)")
        #expect((try cli("contacts", "list", "--json").json["contacts"] as? [Any])?.count == 2)
        let refused = try cli("contacts", "split", "1")
        #expect(refused.status == 65)
        #expect(refused.stderr == "meishi: error: nothing to split: #1 Alice Smith holds no merge any more (the one merge into it was undone)\n",
                "\(refused.stderr)")
    }

    /// ../shared/corpus/vcard: "merged VCard Test into #14 parent (email +4, phone +11, url +6…)"
    /// is gone; every merge in the corpus joins cards of one name.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: ContactsVCardTests.corpus), "skipped: ../shared/corpus/vcard is not present"),
          .timeLimit(.minutes(5)))
    func theCorpusMergesOnlyTheSamePerson() throws {
        let corpus = ContactsVCardTests.corpus
        let files = FileManager.default.enumerator(atPath: corpus)!.compactMap { $0 as? String }.filter { $0.hasSuffix(".vcf") }.sorted()
        let cli = try CLI.initialised()
        let r = try cli.run(["contacts", "import"] + files.map { corpus + "/" + $0 })
        #expect(r.status == 0 || r.status == 65, "\(r.stderr)")
        #expect(r.stdout.contains("imported VCard Test as #"), "\(r.stdout)")
        #expect(!r.stdout.contains("merged VCard Test"), "\(r.stdout)")
        for line in r.stdout.split(separator: "\n") where line.hasPrefix("merged ") {
            let who = line.dropFirst(7).components(separatedBy: " into #")
            let into = who[1].drop { $0 != " " }.dropFirst().components(separatedBy: " (")[0]
            // A card without a name merges only into a contact without one.
            #expect(who[0].lowercased() == (into.isEmpty ? "(no name)" : into.lowercased()), "\(line)")
        }
    }

    /// Issue 22 finding 2 on the terminal: a card with many look-alikes gets three warnings
    /// naming them and one counting the rest, not one line per look-alike.
    @Test func manyLookAlikesAreCountedNotListed() throws {
        let cli = try CLI.initialised()
        let text = (0..<40).map { "BEGIN:VCARD\nVERSION:3.0\nFN:Alice\nEMAIL:alice\($0)@example.org\nEND:VCARD\n" }.joined()
        let r = try cli("contacts", "import", try cli.file("alices.vcf", Data(text.utf8)))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("40 imported, 0 merged, 0 skipped\n"))
        let warnings = r.stderr.split(separator: "\n")
        #expect(warnings.count <= 40 * 4, "\(warnings.count) warning lines")
        #expect(r.stderr.contains("meishi: warning: Alice (#40) also shares its name or email with 13 or more other contacts: "
                                  + "see 'meishi contacts show 40'"), "\(r.stderr.suffix(600))")
    }

    /// Seen 2: Ken holds Mei's professional card (email, two phones); they meet again and Mei
    /// shares --level public. The exchange says what changed, `contacts show` keeps the email
    /// and phones from the earlier card (apart in --json), and the export writes them all.
    @Test func aLaterExchangeErasesNothing() throws {
        let mei = try CLI.withCard()
        try #require(try mei("card", "add", "phone", "+81 3 1234 5678").status == 0)
        try #require(try mei("card", "add", "url", "https://mei.example", "--level", "public").status == 0)
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        func meet(_ extra: [String]) throws -> CLI.Result {
            let (listener, port, _, _) = try ExchangeCommandTests.startListener(mei, ["--timeout", "60"] + extra)
            let dial = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes"])
            listener.waitUntilExit()
            #expect(listener.terminationStatus == 0)
            return dial
        }
        let first = try meet([])
        #expect(first.status == 0, "\(first.stderr)")
        sleep(1)  // a newer card: its signed timestamp (seconds) must be later
        let second = try meet(["--level", "public"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("updated Mei Tanaka (#1, signed): email no longer shared, phone ×2 no longer shared, "
                                       + "level public (was professional) (what it no longer shares is kept from the earlier card: "
                                       + "meishi contacts show 1)"), "\(second.stdout)")
        let shown = try ken("contacts", "show", "Mei")
        #expect(shown.stdout.contains("from an earlier card, "), "\(shown.stdout)")
        #expect(shown.stdout.contains("(exchange, signed "), "\(shown.stdout)")
        #expect(shown.stdout.contains(": email, phone ×2\n"), "\(shown.stdout)")
        #expect(shown.stdout.contains("mei.tanaka@example.org") && shown.stdout.contains("+81 3 1234 5678"))
        let json = try ken("contacts", "show", "Mei", "--json").json
        #expect((json["fields"] as? [String: [String]])?["email"] == nil)
        #expect((json["earlierFields"] as? [String: [String]])?["email"] == ["mei.tanaka@example.org"])
        let earlierCards = try #require(json["earlierCards"] as? [[String: Any]])
        #expect(earlierCards.count == 1 && earlierCards.first?["level"] as? String == "professional")
        let export = try ken("contacts", "export")
        // The union of the current and the earlier card.
        #expect(export.stdout.contains("mei.tanaka@example.org") && export.stdout.contains("+81 3 1234 5678"), "\(export.stdout)")
    }

    /// `contacts add` of a newer card says what changed, in words.
    @Test func contactsAddSaysWhatANewerCardChanged() async throws {
        var mei = InProcess()
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        #expect(await mei("card", "set", "title", "Engineer").status == 0)
        #expect(await mei("card", "add", "email", "mei@example.org").status == 0)
        let professional = await mei("card", "export").out
        mei.now = mei.now.addingTimeInterval(60)
        #expect(await mei("card", "set", "title", "Lead").status == 0)
        #expect(await mei("card", "add", "url", "https://mei.example", "--level", "public").status == 0)
        let publicCard = await mei("card", "export", "--level", "public").out
        var ken = InProcess()
        ken.now = mei.now.addingTimeInterval(10)
        #expect(await ken("init").status == 0)
        ken.stdin = Array(professional.utf8)
        #expect(await ken("contacts", "add", "-").out.hasPrefix("added Mei Tanaka as #1 (signed)"))
        ken.stdin = Array(publicCard.utf8)
        let updated = await ken("contacts", "add", "-")
        #expect(updated.out == "updated Mei Tanaka (#1, signed): title changed, email no longer shared, +url, level public (was professional) "
                + "(what it no longer shares is kept from the earlier card: meishi contacts show 1)\n", "\(updated.out)")
        let shown = await ken("contacts", "show", "1")
        #expect(shown.out.contains("from an earlier card, 2027-01-15 (stdin, signed 2027-01-15T08:00:00Z): email\n  email        mei@example.org"),
                "\(shown.out)")
    }

    /// Seen 3: `card set email` on a card of two emails replaced both, silently. It now refuses
    /// without a terminal (the hint names --replace, card add and card unset), asks on one, and
    /// `--replace` names the value; `card add` keeps appending.
    @Test func cardSetOnSeveralValuesAsksOrRefuses() async throws {
        let cli = try CLI.withCard()
        #expect(try cli("card", "add", "email", "mei@work.example").status == 0)
        let refused = try cli("card", "set", "email", "a@b.example")
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("meishi: error: your card has 2 email values: \"mei.tanaka@example.org\", \"mei@work.example\"; "
                                        + "'card set' would replace them all"), "\(refused.stderr)")
        #expect(refused.stderr.contains("--replace VALUE") && refused.stderr.contains("meishi card add email VALUE")
                && refused.stderr.contains("meishi card unset email VALUE"), "\(refused.stderr)")
        let replaced = try cli("card", "set", "email", "a@b.example", "--replace", "mei@work.example")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(replaced.stdout == "email = a@b.example (professional), replacing mei@work.example\n", "\(replaced.stdout)")
        let card = try cli("card", "show", "--json").stdout
        #expect(card.contains("mei.tanaka@example.org") && card.contains("a@b.example") && !card.contains("mei@work.example"))
        #expect(try cli("card", "add", "email", "third@b.example").status == 0)

        var mei = InProcess(answers: ["2"], interactive: true)
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "add", "email", "one@example.org").status == 0)
        #expect(await mei("card", "add", "email", "two@example.org").status == 0)
        let asked = await mei("card", "set", "email", "new@example.org")
        #expect(asked.status == 0, "\(asked.err)")
        #expect(asked.out.hasSuffix("email = new@example.org (professional), replacing two@example.org\n"), "\(asked.out)")
    }
}
