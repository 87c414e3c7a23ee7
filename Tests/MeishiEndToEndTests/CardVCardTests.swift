import Foundation
import Testing

/// `card import`, `card edit` and `scan --import` of a person's own vCard QR.
@Suite struct CardVCardTests {
    @Test func cardImportFillsTheCard() throws {
        let mei = CLI()
        try #require(try mei("init").status == 0)
        let vcf = try mei.file("me.vcf", Data("""
            BEGIN:VCARD
            VERSION:3.0
            FN:Mei Tanaka
            ORG:Example;Robotics
            EMAIL;TYPE=work:mei@example.org
            EMAIL:not an email
            TEL:+81 90 1234 5678
            URL:https://example.org/mei
            END:VCARD
            """.utf8))
        let r = try mei("card", "import", vcf)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("name = Mei Tanaka (public)"))
        #expect(r.stdout.contains("email = mei@example.org (professional)"))
        #expect(r.stderr.contains("meishi: warning: left out email \"not an email\": \"not an email\" is not an email address"))
        let card = try #require(try mei("card", "show", "--json").json["fields"] as? [String: [[String: Any]]])
        #expect(card["org"]?.first?["value"] as? String == "Example, Robotics")
        #expect(card["phone"]?.first?["e164"] as? String == "+819012345678")
        // --level for every value; importing the same again adds nothing.
        let again = try mei("card", "import", "--level", "personal", vcf)
        #expect(again.status == 1)
        #expect(again.stderr.contains("meishi: error: nothing to import"))
        let two = try mei.file("two.vcf", Data("BEGIN:VCARD\nFN:A\nEND:VCARD\nBEGIN:VCARD\nFN:B\nEND:VCARD\n".utf8))
        let refused = try mei("card", "import", two)
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("holds 2 cards"))
        let empty = try mei.file("empty.vcf", Data())
        #expect(try mei("card", "import", empty).stderr.contains("\(empty):1: not a vCard: no BEGIN:VCARD"))
    }

    /// An editor script: replaces the file with the text in $NEW_CARD, or on its second run
    /// with $NEW_CARD_2 (a person fixing the mistake the first save had).
    func editor(_ cli: CLI) throws -> String {
        let script = """
            #!/bin/sh
            count_file="$(dirname "$1")/editor-runs"
            n=$(cat "$count_file" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$count_file"
            cp "$1" "$(dirname "$1")/seen-$n.txt"
            if [ "$n" -ge 2 ] && [ -n "$NEW_CARD_2" ]; then printf '%s' "$NEW_CARD_2" > "$1"; else printf '%s' "$NEW_CARD" > "$1"; fi
            """
        let path = try cli.file("editor.sh", Data(script.utf8))
        chmod(path, 0o755)
        return path
    }

    @Test func cardEditSavesValidatesAndReopens() throws {
        let mei = try CLI.withCard()
        let ed = try editor(mei)
        let ok = try mei.run(["card", "edit"], extraEnvironment: [
            "EDITOR": ed, "VISUAL": "",
            "NEW_CARD": "# comment\nname: Mei Tanaka\nemail [public]: mei@example.org\nemail: second@example.org\nnote [personal]: hello\n",
        ])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("saved your card (4 values)"))
        let seen = try String(contentsOfFile: mei.home + "/seen-1.txt", encoding: .utf8)
        #expect(seen.contains("org [public]: Example Robotics\n"))
        #expect(seen.contains("phone [professional]: +81 90 1234 5678\n"))
        let card = try #require(try mei("card", "show", "--json").json["fields"] as? [String: [[String: Any]]])
        #expect(card["email"]?.map { $0["level"] as? String } == ["public", "professional"])
        #expect(card["org"] == nil)
        #expect(!FileManager.default.fileExists(atPath: mei.home + "/card-edit.txt"))

        // A mistake reopens the editor with the error on top; the fix is saved.
        try? FileManager.default.removeItem(atPath: mei.home + "/editor-runs")
        let fixed = try mei.run(["card", "edit"], extraEnvironment: [
            "EDITOR": ed, "VISUAL": "", "NEW_CARD": "name: Mei\nemail: not-an-email\n", "NEW_CARD_2": "name: Mei\nemail: mei@example.org\n",
        ])
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(fixed.stderr.contains("meishi: warning: line 2: \"not-an-email\" is not an email address"))
        #expect(try String(contentsOfFile: mei.home + "/seen-2.txt", encoding: .utf8).hasPrefix("# error: line 2: \"not-an-email\""))
        #expect(try mei("card", "show").stdout.contains("mei@example.org"))

        // The same mistake saved again gives up without saving; an empty file cancels.
        let before = try mei("card", "show", "--json").stdout
        try? FileManager.default.removeItem(atPath: mei.home + "/editor-runs")
        let stuck = try mei.run(["card", "edit"], extraEnvironment: ["EDITOR": ed, "VISUAL": "", "NEW_CARD": "name: A\nname: B\n"])
        #expect(stuck.status == 65)
        #expect(stuck.stderr.contains("meishi: error: card not saved: line 2: name holds one value"))
        let cancelled = try mei.run(["card", "edit"], extraEnvironment: ["EDITOR": ed, "VISUAL": "", "NEW_CARD": "# nothing\n"])
        #expect(cancelled.status == 1)
        #expect(cancelled.stderr.contains("card edit cancelled"))
        let badLevel = try mei.run(["card", "edit"], extraEnvironment: ["EDITOR": ed, "VISUAL": "", "NEW_CARD": "name [secret]: A\n"])
        #expect(badLevel.status == 65)
        #expect(try mei("card", "show", "--json").stdout == before)
        let failing = try mei.run(["card", "edit"], extraEnvironment: ["EDITOR": "false", "VISUAL": ""])
        #expect(failing.status == 1)
        #expect(failing.stderr.contains("the editor false failed"))
    }

    /// Scanning a person's own --vcard QR when their signed card is stored merges into it:
    /// no second contact, no false impersonation warning.
    @Test func scanImportOfAKnownPersonsVCardQRMerges() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        try #require(try ken("card", "set", "title", "Engineer").status == 0)
        let signed = try mei.file("ken.json", try ken.export("--level", "public"))
        try #require(try mei("contacts", "add", signed).status == 0)
        let png = (ken.home as NSString).deletingLastPathComponent + "/ken-vcard.png"
        try #require(try ken("card", "qr", "--vcard", "-o", png).status == 0)
        let r = try mei("scan", "--import", png)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains("impersonation"), "\(r.stderr)")
        #expect(r.stdout.contains("updated Ken Sato as #1 (signed)"), "\(r.stdout)")
        let list = try #require(try mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]])
        #expect(list.count == 1)
        let shown = try mei("contacts", "show", "Ken")
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("ken@example.org  (unsigned: from a vCard, not signed)"))
        // Again: nothing new.
        #expect(try mei("scan", "--import", png).stdout.contains("unchanged"))
    }
}
