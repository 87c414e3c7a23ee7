import Foundation
import Testing
@testable import meishi

/// Issue 21, what a fresh tester broke in import and merge: cards of different people joined
/// under one key whatever the rule or `--no-merge` said (finding 2), a merged card's title or
/// note lost (3), any vCard carrying a met contact's DID added to it (4), `split` on a contact
/// with nothing to undo (5), round trips that lost the UID and duplicated contacts (8).
@Suite struct ImportMergeRuleTests {
    let dir = Fixtures.temporaryDirectory()

    func file(_ name: String, _ text: String) throws -> String {
        let path = dir + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    func home() async -> InProcess {
        let p = InProcess()
        #expect(await p("init").status == 0)
        return p
    }

    func count(_ p: InProcess) async -> Int {
        (Self.json(await p("contacts", "list", "--json").out)["contacts"] as? [Any])?.count ?? -1
    }

    static let twoJohns = "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:John Park\r\nADR:;;1 Oak St;Springfield;;;\r\nEND:VCARD\r\n"
        + "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:john park\r\nADR:;;99 Elm Rd;Shelbyville;;;\r\nNOTE:the other John Park\r\nEND:VCARD\r\n"

    /// Finding 2a: two people of one name with no email or phone shared one key and merged, even
    /// with --no-merge ("the same name and a shared email or phone", which they did not have);
    /// after `split`, importing the file again merged them back. They stay two, and importing
    /// the file again finds each card unchanged, with --no-merge or not.
    @Test func twoPeopleOfOneNameWithoutEmailOrPhoneStayTwo() async throws {
        let p = await home()
        let f = try file("twojohns.vcf", Self.twoJohns)
        let r = await p("contacts", "import", "--no-merge", f)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.out.hasSuffix("2 imported, 0 merged, 0 skipped\n"), "\(r.out)")
        #expect(await p("contacts", "show", "2").out.contains("99 Elm Rd, Shelbyville"))
        for extra in [[], ["--no-merge"]] {
            let again = await p(["contacts", "import"] + extra + [f])
            #expect(again.out == "skipped John Park: #1 already holds everything\nskipped john park: #2 already holds everything\n"
                    + "0 imported, 0 merged, 2 skipped\n", "\(again.out)")
        }
        #expect(await count(p) == 2)
    }

    /// Finding 2b: every card without a name, email or phone had the same key: a URL-only card
    /// and an address-and-note card became one contact.
    @Test func namelessCardsWithoutEmailOrPhoneStayApart() async throws {
        let p = await home()
        let f = try file("nameless.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nURL:https://one.example\r\nEND:VCARD\r\n"
                         + "BEGIN:VCARD\r\nVERSION:3.0\r\nADR:;;5 Pine St;Ogdenville;;;\r\nNOTE:someone else\r\nEND:VCARD\r\n")
        let r = await p("contacts", "import", f)
        #expect(r.out.hasSuffix("2 imported, 0 merged, 0 skipped\n"), "\(r.out)")
        #expect(await count(p) == 2)
    }

    /// Finding 2b on the corpus: four unrelated files, none with a name, email or phone in common,
    /// became one contact ("1 imported, 3 merged").
    @Test(.enabled(if: FileManager.default.fileExists(atPath: ContactsVCardTests.corpus), "skipped: ../shared/corpus/vcard is not present"))
    func fourUnrelatedCorpusCardsStayFour() async throws {
        let p = await home()
        let files = ["ical4j-vcard/vcard-url.vcf", "ical4j-vcard/vcard-group.vcf", "android-vcard/v21_android_custom_prop.vcf",
                     "android-vcard/v21_im.vcf"].map { ContactsVCardTests.corpus + "/" + $0 }
        #expect(await p(["contacts", "import"] + files).out.hasSuffix("4 imported, 0 merged, 0 skipped\n"))
    }

    /// Finding 2c: two cards claiming the same X-MEISHI-DID (unknown to the store) under
    /// different names, sharing nothing, merged even with --no-merge. The first keeps the claim;
    /// a card holding nothing but another name and the claim is not "already held" by it.
    @Test func aSharedClaimedDIDMergesNothingByItself() async throws {
        let did = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
        for extra in [[String](), ["--no-merge"]] {
            let p = await home()
            let f = try file("claims.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann Lee\r\nX-MEISHI-DID:\(did)\r\nEND:VCARD\r\n"
                             + "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bo Chan\r\nNOTE:hi\r\nX-MEISHI-DID:\(did)\r\nEND:VCARD\r\n"
                             + "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Cy Dunn\r\nX-MEISHI-DID:\(did)\r\nEND:VCARD\r\n")
            let r = await p(["contacts", "import"] + extra + [f])
            #expect(r.out.hasSuffix("3 imported, 0 merged, 0 skipped\n"), "\(extra): \(r.out)")
            #expect(await p("contacts", "show", "Bo Chan").out.contains("hi"))
            #expect(await p("contacts", "export", "Ann Lee").out.contains("X-MEISHI-DID:\(did)\r\n"))
            #expect(await p(["contacts", "import"] + extra + [f]).out.hasSuffix("0 imported, 0 merged, 3 skipped\n"))
        }
    }

    /// Finding 3: the merge of Chen Wei's second card said "(phone +1)" and its NOTE was gone
    /// from show, --json and export; the same for a second TITLE. Every value is kept, said and
    /// exported, and `split` takes them out again.
    @Test func aMergedCardsNoteAndTitleAreKept() async throws {
        let p = await home()
        let cards = try (1...2).map { i in
            try file("chen\(i).vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Chen Wei\r\nEMAIL:chen@example.org\r\nTEL:+1 555 030\(i)\r\n"
                     + "NOTE:card \(i)\r\nEND:VCARD\r\n")
        }
        let r = await p("contacts", "import", cards[0], cards[1])
        #expect(r.out.contains("merged Chen Wei into #1 Chen Wei (phone +1, note +1): the same name and a shared email or phone"), "\(r.out)")
        #expect(await p("contacts", "show", "1").out.contains("note         card 1\n  note         card 2\n"))
        let fields = Self.json(await p("contacts", "show", "1", "--json").out)["fields"] as? [String: [String]]
        #expect(fields?["note"] == ["card 1", "card 2"])
        let export = await p("contacts", "export").out
        #expect(export.contains("NOTE:card 1\r\nNOTE:card 2\r\n"), "\(export)")
        #expect(await p("contacts", "split", "1").out == "split Chen Wei out of #1 Chen Wei (phone -1, note -1): now #2 (unsigned)\n")
        #expect(await p("contacts", "import", cards[0], cards[1]).out.hasSuffix("0 imported, 0 merged, 2 skipped\n"))

        let dana = try file("dana.vcf", "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Dana Ruiz\r\nEMAIL:dana@example.org\r\nTITLE:Engineer\r\nEND:VCARD\r\n"
                            + "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Dana Ruiz\r\nEMAIL:dana@example.org\r\nTITLE:Director\r\nEND:VCARD\r\n")
        #expect(await p("contacts", "import", dana).out.contains("merged Dana Ruiz into #3 Dana Ruiz (title +1)"))
        let shown = await p("contacts", "export", "Dana Ruiz").out
        #expect(shown.contains("TITLE:Engineer\r\nTITLE:Director\r\n"), "\(shown)")
    }

    /// A signed Ken Sato in Mei's store (`contacts add` of his card), and his DID.
    func metKen() async throws -> (InProcess, did: String) {
        let ken = InProcess()
        #expect(await ken("init").status == 0)
        #expect(await ken("card", "set", "name", "Ken Sato").status == 0)
        #expect(await ken("card", "add", "email", "ken@sato.example").status == 0)
        let card = await ken("card", "export").out
        var mei = await home()
        mei.stdin = Array(card.utf8)
        #expect(await mei("contacts", "add", "-").status == 0)
        let did = try #require(Self.json(await mei("contacts", "show", "1", "--json").out)["did"] as? String)
        return (mei, did)
    }

    /// Finding 4: a vCard carrying Ken's DID under the name "Totally Not Ken" added the
    /// attacker's phone, email and URL to Ken, moved his last-seen time, exported them as plain
    /// values beside X-MEISHI-TRUST, and `split` could not undo it. Another name is now kept
    /// apart (and said); the same name merges as unsigned information, recorded, marked in the
    /// export and never first or preferred, without moving last-seen; `split` undoes it.
    @Test func aCardCarryingAMetContactsDIDNeedsItsName() async throws {
        var (mei, did) = try await metKen()
        let before = Self.json(await mei("contacts", "show", "1", "--json").out)
        mei.now = mei.now.addingTimeInterval(3600)
        let fake = try file("fake.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Totally Not Ken\r\nTEL;TYPE=pref:+1 555 6666\r\n"
                            + "EMAIL:evil@x.example\r\nURL:https://evil.example\r\nX-MEISHI-DID:\(did)\r\nEND:VCARD\r\n")
        let r = await mei("contacts", "import", fake)
        #expect(r.out.hasPrefix("imported Totally Not Ken as #2 (unsigned)\n"), "\(r.out)")
        #expect(r.err.contains("meishi: warning: Totally Not Ken carries the DID of #1 Ken Sato (signed) under another name: "
                               + "kept apart as #2, nothing added to #1"), "\(r.err)")
        let ken = await mei("contacts", "export", "1").out
        #expect(!ken.contains("evil") && !ken.contains("6666"), "\(ken)")
        #expect(!(await mei("contacts", "export", "2").out.contains("X-MEISHI-DID")), "the false claim is exported again")

        let same = try file("ken.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ken Sato\r\nTEL;PREF=1:+1 555 7777\r\nTITLE:Director\r\n"
                            + "X-MEISHI-DID:\(did)\r\nEND:VCARD\r\n")
        #expect(await mei("contacts", "import", same).out.contains("merged Ken Sato into #1 Ken Sato as unsigned information (title +1, phone +1)"))
        let after = Self.json(await mei("contacts", "show", "1", "--json").out)
        #expect(after["lastSeen"] as? Int == before["lastSeen"] as? Int && after["lastSeen"] != nil, "\(after)")
        for version in ["3.0", "4.0"] {
            let export = await mei("contacts", "export", "--vcard-version", version, "1").out
            #expect(export.contains("TEL;X-MEISHI-UNSIGNED=true" + (version == "4.0" ? ";VALUE=text" : "") + ":+1 555 7777\r\n"), "\(export)")
            #expect(export.contains("TITLE;X-MEISHI-UNSIGNED=true:Director\r\n") && !export.contains("PREF"), "\(export)")
        }
        let split = await mei("contacts", "split", "1")
        #expect(split.out == "split Ken Sato out of #1 Ken Sato (title -1, phone -1): now #3 (unsigned)\n", "\(split.out) \(split.err)")
        #expect(!(await mei("contacts", "export", "1").out.contains("7777")))
        // The same file again finds the card standing alone: it does not merge back.
        #expect(await mei("contacts", "import", same).out == "skipped Ken Sato: #3 already holds everything\n0 imported, 0 merged, 1 skipped\n")
    }

    /// Finding 5: `split` on a contact with nothing to undo said "no merge into it is recorded"
    /// and told to delete and re-import. It now says why there is nothing: never merged, or
    /// every merge undone; exit 65.
    @Test func splitSaysWhyThereIsNothingToSplit() async throws {
        var (mei, _) = try await metKen()
        let bob = try file("bob.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bob Smith\r\nEMAIL:bob@smith.example\r\nEND:VCARD\r\n")
        #expect(await mei("contacts", "import", bob).status == 0)
        for (ref, name) in [("2", "#2 Bob Smith"), ("1", "#1 Ken Sato")] {
            let r = await mei("contacts", "split", ref)
            #expect(r.status == 65 && r.err == "meishi: error: nothing to split: \(name) was never merged\n", "\(r.err)")
        }
        mei.now = mei.now.addingTimeInterval(60)
        let bob2 = try file("bob2.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Bob Smith\r\nEMAIL:bob@smith.example\r\nTEL:+1 555 0101\r\nEND:VCARD\r\n")
        #expect(await mei("contacts", "import", bob2).out.contains("merged Bob Smith into #2"))
        #expect(await mei("contacts", "split", "2").status == 0)
        let r = await mei("contacts", "split", "2")
        #expect(r.status == 65 && r.err == "meishi: error: nothing to split: #2 Bob Smith holds no merge any more "
                + "(the one merge into it was undone)\n", "\(r.err)")
    }

    /// Finding 8: a card's UID was replaced by a new one on export (khard then listed it twice),
    /// and meishi's own export imported again added the nameless contacts again (written with
    /// `FN:-` or the email as FN) and reported merges that changed nothing. The UID is kept and
    /// exported (a vdir file is named after it, two UIDs of one file name each get a file), and
    /// the own export, 3.0 or 4.0, file or vdir, is unchanged for every contact.
    @Test func anImportedUIDIsKeptAndTheOwnExportIsUnchanged() async throws {
        var (mei, _) = try await metKen()
        let f = try file("mixed.vcf", """
            BEGIN:VCARD\r\nVERSION:3.0\r\nUID:khard-uid-abc123\r\nFN:Ada Byron\r\nN:Byron;Ada;;;\r\nORG:Engines;Analytical\r
            EMAIL;TYPE=work,pref:ada@example.org\r\nADR;TYPE=home:;;12 St James Sq;London;;;UK\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:3.0\r\nUID:khard:uid:abc123\r\nFN:Bea Lin\r\nEMAIL:bea@example.org\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:3.0\r\nFN:\r\nN:;;;;\r\nEMAIL:zed@example.com\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:3.0\r\nORG:Acme\r\nTEL:+1 555 0199\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:3.0\r\nURL:https://only.example\r\nNOTE:first line=0D=0Asecond\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Chen Wei\r\nEMAIL:chen@example.org\r\nNOTE:card 1\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Chen Wei\r\nEMAIL:chen@example.org\r\nNOTE:card 2\r\nTEL:+1 555 0302\r\nEND:VCARD\r\n
            """)
        #expect(await mei("contacts", "import", f).out.hasSuffix("6 imported, 1 merged, 0 skipped\n"))
        mei.stdin = Array("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ken Sato\r\nTITLE:Director\r\nX-MEISHI-DID:\(try #require(Self.json(await mei("contacts", "show", "1", "--json").out)["did"] as? String))\r\nEND:VCARD\r\n".utf8)
        #expect(await mei("contacts", "import", "-").out.contains("merged Ken Sato"))
        let n = await count(mei)
        #expect(n == 7)
        let vdir = dir + "/book"
        #expect(await mei("contacts", "export", "--vdir", vdir).status == 0)
        let ada = try String(contentsOfFile: vdir + "/khard-uid-abc123.vcf", encoding: .utf8)
        #expect(ada.contains("UID:khard-uid-abc123\r\n"), "\(ada)")
        let files = try FileManager.default.contentsOfDirectory(atPath: vdir).filter { $0.hasSuffix(".vcf") }.sorted()
        // "khard:uid:abc123" spells the same file name: that contact's file takes its id too.
        #expect(files.count == n && files.contains("khard-uid-abc123-3.vcf"), "\(files)")
        for version in ["3.0", "4.0"] {
            let all = try file("all-\(version).vcf", await mei("contacts", "export", "--vcard-version", version).out)
            let again = await mei("contacts", "import", all)
            #expect(again.out.hasSuffix("0 imported, 0 merged, \(n) skipped\n"), "\(version): \(again.out)")
        }
        let back = await mei(["contacts", "import"] + files.map { vdir + "/" + $0 })
        #expect(back.out.hasSuffix("0 imported, 0 merged, \(n) skipped\n"), "\(back.out)")
        #expect(await count(mei) == n)
        // A fresh home reads the nameless contacts back without a name, not as "-" or their email.
        var other = await home()
        other.stdin = Array(await mei("contacts", "export").out.utf8)
        #expect(await other("contacts", "import", "-").status == 0)
        let names = (Self.json(await other("contacts", "list", "--json").out)["contacts"] as? [[String: Any]])?.map { $0["name"] as? String }
        #expect(names?.filter { $0 == nil }.count == 3 && names?.contains("-") == false && names?.contains("zed@example.com") == false,
                "\(String(describing: names))")
    }

    /// Minor findings: a nameless contact was "zed@example.com" in the import, "-" in the list
    /// and "(no name)" in show; a name over 256 bytes was dropped silently.
    @Test func aNamelessContactIsNoNameEverywhereAndALongNameIsSaid() async throws {
        let p = await home()
        let long = String(repeating: "A", count: 300)
        let f = try file("nameless.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nEMAIL:zed@example.com\r\nEND:VCARD\r\n"
                         + "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:\(long)\r\nTEL:+1 555 0000\r\nEND:VCARD\r\n")
        let r = await p("contacts", "import", f)
        #expect(r.out.hasPrefix("imported (no name) <zed@example.com> as #1 (unsigned)\nimported (no name) <+1 555 0000> as #2 (unsigned)\n"),
                "\(r.out)")
        #expect(r.err.contains("meishi: warning: \(f):5: name (FN) longer than 256 bytes: stored without a name, the FN kept as written"),
                "\(r.err)")
        #expect(await p("contacts", "list").out.contains("#1  (no name)  -"))
        #expect(await p("contacts", "show", "1").out.hasPrefix("(no name)  [#1, unsigned]"))
        #expect(await p("contacts", "export", "2").out.contains("FN:" + long.prefix(70)))
    }
}
