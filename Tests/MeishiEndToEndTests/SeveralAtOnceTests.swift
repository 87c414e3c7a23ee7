import Foundation
import Testing
@testable import meishi

/// A day of use (issue 27): several card files to `contacts add`, several REFs to `contacts
/// delete` (all or nothing, both), and `contacts search TEXT`.
@Suite struct SeveralAtOnceTests {
    /// Card files of Ken, Ann and Bo, and one that does not verify.
    static func cardFiles() async throws -> (ken: String, ann: String, bo: String, broken: String) {
        var files: [String] = []
        for name in ["Ken Sato", "Ann Lee", "Bo Chan"] {
            let p = await NewUserTests.person(name)
            files.append(try NewUserTests.write(await p("card", "export").out, name.split(separator: " ")[0].lowercased() + ".json"))
        }
        var broken = try String(contentsOfFile: files[2], encoding: .utf8)
        broken = broken.replacingOccurrences(of: "Bo Chan", with: "Bo Chen")
        return (files[0], files[1], files[2], try NewUserTests.write(broken, "broken.json"))
    }

    @Test func addingSeveralFilesStoresAllOrNone() async throws {
        let (ken, ann, bo, broken) = try await Self.cardFiles()
        var mei = await NewUserTests.person()
        let refused = await mei("contacts", "add", ken, broken, ann)
        #expect(refused.status == 65, "\(refused.err)")
        #expect(refused.err.hasPrefix("meishi: error: \(broken): ") && refused.err.contains("(none of the 3 cards was added)"), "\(refused.err)")
        #expect(await mei("contacts", "list", "--json").out.contains("\"contacts\": []"), "nothing stored")
        let own = try NewUserTests.write(await mei("card", "export").out, "mei.json")
        let mine = await mei("contacts", "add", ken, own)
        #expect(mine.status == 65 && mine.err.hasPrefix("meishi: error: \(own): that is your own card (none of the 2 cards was added)"),
                "\(mine.err)")
        let added = await mei("contacts", "add", ken, ann)
        #expect(added.status == 0, "\(added.err)")
        #expect(added.out.hasPrefix("added Ken Sato as #1 (signed)") && added.out.contains("\nadded Ann Lee as #2 (signed)"), "\(added.out)")
        let json = await mei("contacts", "add", bo, ken, "--json")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        let items = try #require(doc["added"] as? [[String: Any]], "\(json.out)")
        #expect(items.map { $0["file"] as? String } == [bo, ken])
        #expect(items.map { $0["result"] as? String } == ["added", "unchanged"], "\(json.out)")
        // One file: the document it always was.
        #expect(await mei("contacts", "add", ken, "--json").out.contains("\"result\": \"unchanged\""))
        mei.stdin = Array("{}".utf8)
        #expect(await mei("contacts", "add", "-", "-").status == 64)
    }

    @Test func deletingSeveralRefsDeletesAllOrNone() async throws {
        let (ken, ann, bo, _) = try await Self.cardFiles()
        var mei = await NewUserTests.person(answers: ["n"], interactive: true)
        #expect(await mei("contacts", "add", ken, ann, bo).status == 0)
        let unknown = await mei("contacts", "delete", "1", "Nobody", "--yes")
        #expect(unknown.status != 0 && unknown.err.contains("Nobody"), "\(unknown.err)")
        #expect(await mei("contacts", "list", "--json").out.components(separatedBy: "\"did\"").count == 4, "all three kept")
        // At a terminal the contacts are listed and asked about once.
        let no = await mei("contacts", "delete", "1", "Ann")
        #expect(no.status == 1 && no.err == "meishi: error: nothing deleted\n")
        let question = try #require(mei.recorder.questions.last)
        #expect(question.hasPrefix("delete these 2 contacts?\n  Ken Sato (#1, signed) did:key:") && question.contains("\n  Ann Lee (#2, signed)"),
                "\(question)")
        mei.interactive = false
        // The same contact twice is deleted once.
        let deleted = await mei("contacts", "delete", "1", "Ken", "Ann", "--json")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(deleted.out.utf8)) as? [String: Any], "\(deleted.err)")
        #expect((doc["deleted"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == ["Ken Sato", "Ann Lee"], "\(deleted.out)")
        let one = await mei("contacts", "delete", "Bo")
        #expect(one.out.hasPrefix("deleted Bo Chan (#3)"), "\(one.out)")
    }

    @Test func searchIsListSearch() async throws {
        let (ken, ann, bo, _) = try await Self.cardFiles()
        let mei = await NewUserTests.person()
        #expect(await mei("contacts", "add", ken, ann, bo).status == 0)
        // Spaces never occur in a DID: only the names can match.
        let found = await mei("contacts", "search", "n Lee")
        #expect(found.out == (await mei("contacts", "list", "--search", "n Lee")).out)
        #expect(found.out.contains("Ann Lee") && !found.out.contains("Bo Chan") && !found.out.contains("Ken Sato"), "\(found.out)")
        #expect(await mei("contacts", "search", "o Ch", "--json").out == (await mei("contacts", "list", "--search", "o Ch", "--json")).out)
        #expect(await mei("contacts", "search", "o Ch", "--json").out.contains("Bo Chan"))
        #expect(await mei("contacts", "search", "no one here").err == "meishi: no contacts match\n")
        let blank = await mei("contacts", "search", " ")
        #expect(blank.status == 64 && blank.err.contains("give the text to look for"), "\(blank.err)")
    }
}

/// `exchange --code` with a typo in a word of the list: read as the list word, said, and the
/// exchange authenticates against the other side's code as generated.
@Suite struct CodeTypoTests {
    @Test func aMistypedListWordStillMatches() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let (listener, port, out, err) = try ExchangeCommandTests.startListener(mei, ["--code", "7-aardvark-adroitness", "--json", "--timeout", "60"])
        let typed = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--code", "7-aardvak-adroitnes", "--json"])
        let (status, result, log) = HostilePeerTests.finish(listener, out, err)
        #expect(typed.status == 0 && status == 0, "\(typed.stderr)\n\(log)")
        #expect(typed.stderr.contains("meishi: read 'aardvak' as 'aardvark'\nmeishi: read 'adroitnes' as 'adroitness'\n"), "\(typed.stderr)")
        #expect((result?["contact"] as? [String: Any])?["name"] as? String == "Ken Sato", "\(log)")
        #expect(typed.json["authentication"] as? String == "code", "\(typed.stdout)")
        // Times are ISO 8601, as in every other JSON meishi prints (they were epoch integers here).
        let contact = try #require(typed.json["contact"] as? [String: Any])
        #expect(JSONConventionTests.isISOTime(contact["lastSeen"]) && JSONConventionTests.isISOTime(contact["cardTimestamp"]), "\(contact)")
    }
}
