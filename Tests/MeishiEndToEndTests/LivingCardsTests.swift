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
        #expect(meetings.first?["at"] as? Int == 1_800_000_010)
        // Filtering: part of the name, any case; nothing else matches.
        #expect(await ken("contacts", "list", "--event", "pycon").out.contains("Mei Tanaka"))
        let none = await ken("contacts", "list", "--event", "JSConf")
        #expect(none.status == 0 && !none.out.contains("Mei") && none.err.contains("no contacts match"), "\(none)")
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
}
