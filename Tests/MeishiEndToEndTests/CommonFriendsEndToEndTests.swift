import Foundation
import Testing
@testable import meishi

/// Two people with contacts in common and not in common: each exchange reports exactly the common
/// ones, stores nothing else, and `meishi friends` shows them later (issue 9).
@Suite(.serialized) struct CommonFriendsEndToEndTests {
    /// Mei knows Cleo, Dev and Eve; Ken knows Cleo, Dev and Fay. Both also imported Gus from the
    /// same vCard (unsigned: never compared) and hold Ivy's email under different DIDs.
    struct World {
        let mei: CLI, ken: CLI
        let names: [String: String]  // name -> DID

        static func make() throws -> World {
            let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
            let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
            var names: [String: String] = [:]
            for (name, holders) in [("Cleo Park", [mei, ken]), ("Dev Rao", [mei, ken]), ("Eve Moss", [mei]), ("Fay Lin", [ken])] {
                let friend = try CLI.withCard(name: name, email: name.lowercased().replacingOccurrences(of: " ", with: ".") + "@example.org")
                names[name] = try friend("id", "--json").json["did"] as? String
                let card = try friend.file("card.json", try friend.export())
                for h in holders { try #require(try h("contacts", "add", card).status == 0) }
            }
            let gus = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Gus Unsigned\r\nEMAIL:gus@example.org\r\nEND:VCARD\r\n"
            for h in [mei, ken] {
                let path = try h.file("gus.vcf", Data(gus.utf8))
                try #require(try h("contacts", "import", path).status == 0)
            }
            return World(mei: mei, ken: ken, names: names)
        }
    }

    static func friendNames(_ json: [String: Any]) -> [String]? {
        ((json["commonFriends"] as? [String: Any])?["friends"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
    }

    /// Runs a --code exchange between the two homes with `extra` on both sides; returns both JSON results.
    static func exchange(_ w: World, listener: [String] = [], dialer: [String] = [], code: Bool = true) throws
        -> (listener: [String: Any], dialer: [String: Any], dialerErr: String) {
        let codeArgs = code ? ["--code", "41-velvet-harbor"] : []
        let (p, port, out, err) = try ExchangeCommandTests.startListener(w.mei, ["--json", "--timeout", "120"] + codeArgs + listener)
        let d = try w.ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes", "--json"] + codeArgs + dialer)
        p.waitUntilExit()
        let l = (try? JSONSerialization.jsonObject(with: out.fileHandleForReading.readDataToEndOfFile())) as? [String: Any] ?? [:]
        #expect(d.status == 0 && p.terminationStatus == 0,
                "\(d.stderr)\n\(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))")
        return (l, d.json, d.stderr)
    }

    @Test(arguments: ["ecdh", "verified", "hash"])
    func twoProcessesLearnExactlyTheCommonFriends(mode: String) throws {
        let w = try World.make()
        let before = (try w.mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]])?.count
        let r = try Self.exchange(w, listener: ["--friends", mode], dialer: ["--friends", mode])
        #expect(Self.friendNames(r.listener) == ["Cleo Park", "Dev Rao"])
        #expect(Self.friendNames(r.dialer) == ["Cleo Park", "Dev Rao"])
        for j in [r.listener, r.dialer] {
            let cf = j["commonFriends"] as? [String: Any]
            #expect(cf?["mode"] as? String == mode && cf?["status"] as? String == "compared")
            #expect(cf?["peerSetSize"] as? Double == 3)
        }
        // Nothing else appears in either store: Mei gained Ken, and no Fay.
        let meis = try w.mei("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(meis?.count == (before ?? 0) + 1)
        #expect(meis?.contains { $0["name"] as? String == "Fay Lin" } == false)
        let common = try w.mei("friends", "common", "Ken Sato", "--json").json
        #expect(common["compared"] as? Bool == true && common["mode"] as? String == mode)
        #expect((common["friends"] as? [[String: Any]])?.compactMap { $0["did"] as? String } == [w.names["Cleo Park"]!, w.names["Dev Rao"]!])
    }

    @Test func matchingEmailsFindsAFriendKnownUnderAnotherKey() throws {
        let w = try World.make()
        // Ken holds a second card of Eve's address from another key: only the email is common.
        let eve2 = try CLI.withCard(name: "Eve (new phone)", email: "EVE.Moss@example.org")
        try #require(try w.ken("contacts", "add", try eve2.file("card.json", try eve2.export())).status == 0)
        let r = try Self.exchange(w, listener: ["--match", "emails"], dialer: ["--match", "emails"])
        #expect(Self.friendNames(r.listener) == ["Cleo Park", "Dev Rao", "Eve Moss"])
        #expect(Self.friendNames(r.dialer) == ["Cleo Park", "Dev Rao", "Eve (new phone)"])
        // Gus was imported unsigned on both sides with the same email: never an element.
        #expect(Self.friendNames(r.dialer)?.contains("Gus Unsigned") == false)
    }

    @Test func yesWithoutACodeSkipsWithANoteOnBothSides() throws {
        let w = try World.make()
        let r = try Self.exchange(w, code: false)
        for j in [r.listener, r.dialer] {
            let cf = j["commonFriends"] as? [String: Any]
            #expect(cf?["status"] as? String == "skipped")
            #expect((cf?["reason"] as? String)?.contains("--yes") == true, "\(cf ?? [:])")
        }
        let text = try w.mei("friends", "common", "Ken Sato")
        #expect(text.stdout.contains("never compared"))
    }

    @Test func capAndOffSkipOnBothSidesAndSayWhy() throws {
        let w = try World.make()
        let r = try Self.exchange(w, listener: ["--max-set", "2"])
        #expect((r.listener["commonFriends"] as? [String: Any])?["reason"] as? String == "not compared: the other side's set of 3 (contacts, and their emails and phones with --match) exceeds --max-set 2")
        #expect((r.dialer["commonFriends"] as? [String: Any])?["reason"] as? String == "not compared: your set of 3 (contacts, and their emails and phones with --match) exceeds the other side's --max-set 2")
        let off = try Self.exchange(w, dialer: ["--friends", "off"])
        #expect((off.listener["commonFriends"] as? [String: Any])?["reason"] as? String == "not compared: the other side uses --friends off")
        #expect(try w.mei("exchange", "--friends", "hash", "--match", "emails").status == 64)
    }

    /// A later exchange that skipped the comparison leaves the earlier result, and `friends common`
    /// says the list is older than the last meeting; a contact never compared has every key, null.
    @Test func aLaterExchangeWithoutComparisonIsSaid() throws {
        let w = try World.make()
        _ = try Self.exchange(w)
        Thread.sleep(forTimeInterval: 1.1)  // times are kept in whole seconds
        let second = try Self.exchange(w, dialer: ["--friends", "off", "--verbose"])
        // --verbose narrates the session's steps, in order.
        let steps = ["connected to 127.0.0.1:", "handshake complete", "sent my card", "received the other card", "both cards acknowledged",
                     "comparing contacts for common friends", "message phase: none from us, none from them", "storing the card"]
        let at = steps.map { second.dialerErr.range(of: $0)?.lowerBound }
        #expect(at.allSatisfy { $0 != nil } && at.map { $0! } == at.map { $0! }.sorted(), "\(second.dialerErr)")
        let r = try w.mei("friends", "common", "Ken Sato")
        #expect(r.stdout == "Common friends (2): Cleo Park, Dev Rao\n")
        #expect(r.stderr.contains("without a comparison: this list may be out of date"), "\(r.stderr)")
        #expect(try w.mei("friends").stdout.contains("2 common friends (ecdh; may be out of date)"))
        // At 40 columns the comparison wraps at a space, under its column (it was cut inside "may").
        if let script = InteropTests.which("script") {
            let command = "stty cols 40 rows 24; MEISHI_HOME='\(w.mei.home)' exec '\(CLI.binary)' friends"
            let (status, screen) = try InteropTests.run(script, ["-qec", command, "/dev/null"])
            let lines = screen.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map(String.init)
            #expect(status == 0 && lines.allSatisfy { $0.count <= 40 }, "\(screen)")
            let at = lines.firstIndex { $0.contains("Ken Sato") }
            #expect(at.map { lines[$0].hasSuffix("2 common friends (ecdh;") && lines[$0 + 1].hasSuffix(" may be out of date)") } == true,
                    "\(screen)")
            #expect(at.map { i in
                lines[i + 1].prefix { $0 == " " }.count == lines[i].distance(from: lines[i].startIndex, to: lines[i].range(of: "2 common")!.lowerBound)
            } == true, "\(screen)")
        }
        let json = try w.mei("friends", "common", "Ken Sato", "--json").json
        #expect(json["seenSinceComparison"] as? Bool == true && json["deletedSince"] as? Double == 0)
        let never = try w.mei("friends", "common", "Cleo Park", "--json").json
        #expect(never["compared"] as? Bool == false && never["friends"] is NSNull && never["mode"] is NSNull)
    }

    /// `meishi friends` and `friends common` in-process, in text and JSON; a contact deleted later drops out.
    @Test func friendsCommandsAndADeletedContactDropsOut() async throws {
        let w = try World.make()
        _ = try Self.exchange(w)
        var run = InProcess()
        run.environment = ["MEISHI_HOME": w.mei.home]
        var r = await run("friends", "common", "Ken")
        #expect(r.status == 0 && r.out == "Common friends (2): Cleo Park, Dev Rao\n", "\(r)")
        r = await run("friends", "--json")
        let rows = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [[String: Any]]
        #expect(rows?.first { $0["name"] as? String == "Ken Sato" }?["commonFriends"] as? Double == 2)
        #expect(rows?.first { $0["name"] as? String == "Cleo Park" }?["compared"] as? Bool == false)
        r = await run("friends", "common", "Cleo")
        #expect(r.out.contains("Cleo Park: never compared"))
        #expect(await run("contacts", "delete", "Cleo Park").status == 0)
        r = await run("friends", "common", "Ken", "--json")
        let common = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
        #expect((common?["friends"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["Dev Rao"])
        #expect(common?["deletedSince"] as? Double == 1)
        r = await run("friends", "common", "Ken")
        #expect(r.err.contains("1 more was found then but deleted from your contacts since"), "\(r.err)")
        r = await run("friends")
        #expect(r.out.split(separator: "\n").contains { $0.contains("Ken Sato") && $0.hasSuffix("  1 common friend (ecdh; 1 deleted since)") },
                "\(r.out)")
        #expect(r.out.contains("Dev Rao") && r.out.contains("never compared") && r.err.contains("never compared: added by QR"))
        r = await run("friends", "common", "nobody")
        #expect(r.status != 0 && r.err.hasPrefix("meishi: error:"))
    }
}

/// The same two people in two network namespaces, finding each other by discovery with a code.
@Suite(.serialized) struct CommonFriendsNamespaceTests {
    @Test(.enabled(if: NamespaceExchangeTests.canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func twoNamespacesReportOnlyTheCommonFriends() throws {
        let teardown = try NamespaceExchangeTests.hosts("mcf", 2)
        defer { teardown() }
        let w = try CommonFriendsEndToEndTests.World.make()
        let first = try NamespaceExchangeTests.exchange(in: "mcf1", home: w.mei.home, ["--code", "77-amber-lantern"])
        let second = try NamespaceExchangeTests.exchange(in: "mcf2", home: w.ken.home, ["--code", "77-amber-lantern", "--friends", "verified"])
        let a = NamespaceExchangeTests.result(first), b = NamespaceExchangeTests.result(second)
        #expect(a.0 == 0 && b.0 == 0, "\(a.2)\n\(b.2)")
        #expect(CommonFriendsEndToEndTests.friendNames(a.1) == ["Cleo Park", "Dev Rao"])
        #expect(CommonFriendsEndToEndTests.friendNames(b.1) == ["Cleo Park", "Dev Rao"])
        #expect((a.1["commonFriends"] as? [String: Any])?["mode"] as? String == "verified")
        let kens = try w.ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(kens?.compactMap { $0["name"] as? String }.sorted() == ["Cleo Park", "Dev Rao", "Fay Lin", "Gus Unsigned", "Mei Tanaka"])
    }
}
