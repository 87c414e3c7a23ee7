import Foundation
import Testing
@testable import meishi

/// `meishi exchange --table` across network namespaces on one bridge (issue 24, PROTOCOL.md §5.7):
/// everyone with the code stores everyone else as `met` with the right common friends; a wrong
/// code, another table, a late or killed member, a guesser and replayed announcements.
extension NamespaceExchangeTests {
    /// One member: `exchange --table CODE --json --timeout SECONDS` in namespace `ns`.
    static func member(in ns: String, home: String, code: String, timeout: Int = 120, _ extra: [String] = []) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        p.arguments = ["netns", "exec", ns, CLI.binary, "--home", home, "exchange", "--table", code, "--timeout", "\(timeout)"] + extra
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return (p, out, err)
    }

    /// People "Person 1"… with a card each.
    static func people(_ n: Int, from first: Int = 1) throws -> [CLI] {
        try (first..<first + n).map { i in try CLI.withCard(name: "Person \(i)", email: "p\(i)@example.org") }
    }

    /// The names in a table's JSON `stored` list.
    static func storedNames(_ json: [String: Any]) -> [String] {
        ((json["stored"] as? [[String: Any]]) ?? []).compactMap { ($0["contact"] as? [String: Any])?["name"] as? String }.sorted()
    }

    /// The names of everyone in a home's contact list.
    static func contactNames(_ cli: CLI) throws -> [String] {
        ((try cli("contacts", "list", "--json").json["contacts"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }.sorted()
    }

    /// A table of 2, 4 or 8 with one code: each stores exactly the others, `met`, with the common
    /// friends of that pair: Bea is everyone's contact, Ann only Person 1's and Person 2's.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"), arguments: [2, 4, 8])
    func aTableWithOneCode(_ n: Int) throws {
        let prefix = "mtb\(n)"
        let teardown = try Self.hosts(prefix, n)
        defer { teardown() }
        let people = try Self.people(n)
        for (name, holders) in [("Bea Common", Array(people)), ("Ann Two", Array(people.prefix(2)))] {
            let friend = try CLI.withCard(name: name, email: name.lowercased().replacingOccurrences(of: " ", with: ".") + "@example.org")
            let card = try friend.file("card.json", try friend.export())
            for h in holders { try #require(try h("contacts", "add", card).status == 0) }
        }
        let runs = try (1...n).map { i in
            try Self.member(in: "\(prefix)\(i)", home: people[i - 1].home, code: "23-table-of-\(n)", ["--json", "--expect", "\(n)"])
        }
        for (i, r) in runs.map(Self.result).enumerated() {
            let me = i + 1
            let others = (1...n).filter { $0 != me }.map { "Person \($0)" }.sorted()
            #expect(r.0 == 0, "person \(me): \(r.2)")
            #expect(r.1["ended"] as? String == "expected", "person \(me): \(r.1)")
            #expect(Self.storedNames(r.1) == others, "person \(me): \(r.2)")
            for s in (r.1["stored"] as? [[String: Any]]) ?? [] {
                let peer = (s["contact"] as? [String: Any])?["name"] as? String ?? "?"
                #expect(s["trust"] as? String == "met", "person \(me) stored \(peer) as \(s["trust"] ?? "?")")
                let friends = (((s["commonFriends"] as? [String: Any])?["friends"] as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }
                let expected = me <= 2 && (peer == "Person 1" || peer == "Person 2") ? ["Ann Two", "Bea Common"] : ["Bea Common"]
                #expect(friends.sorted() == expected, "person \(me) with \(peer): \(friends)")
            }
            let friendsHeld = me <= 2 ? ["Ann Two", "Bea Common"] : ["Bea Common"]
            #expect(try Self.contactNames(people[i]) == (others + friendsHeld).sorted(), "person \(me)")
        }
        // The meeting is recorded as a table (issue 26: how we met), not as a pairwise code.
        let shown = try people[0]("contacts", "show", "Person 2", "--json").json
        #expect((shown["meetings"] as? [[String: Any]])?.compactMap { $0["how"] as? String } == ["table"], "\(shown)")
    }

    /// A ninth host with a wrong code (the same N, other words) next to a table of eight: it stores
    /// nothing and nobody stores it; each member reports one failed pairing, the table completes.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aWrongCodeGetsNobody() throws {
        let teardown = try Self.hosts("mtw", 9)
        defer { teardown() }
        let people = try Self.people(9)
        var runs = try (1...8).map { i in try Self.member(in: "mtw\(i)", home: people[i - 1].home, code: "31-honest-table", ["--json", "--expect", "8"]) }
        runs.append(try Self.member(in: "mtw9", home: people[8].home, code: "31-wrong-guess", timeout: 60, ["--json"]))
        let results = runs.map(Self.result)
        for (i, r) in results.prefix(8).enumerated() {
            let others = (1...8).filter { $0 != i + 1 }.map { "Person \($0)" }.sorted()
            #expect(r.0 == 0, "person \(i + 1): \(r.2)")
            #expect(Self.storedNames(r.1) == others, "person \(i + 1): \(r.2)")
            #expect(try Self.contactNames(people[i]) == others, "person \(i + 1)")
            #expect((r.1["failedPairings"] as? Int ?? 9) <= 1, "person \(i + 1): \(r.1)")
        }
        let outsider = results[8]
        #expect(outsider.0 == 76 || outsider.0 == 75, "\(outsider.2)")
        let outsiderContacts = try Self.contactNames(people[8])
        #expect(Self.storedNames(outsider.1).isEmpty && outsiderContacts.isEmpty, "\(outsider.1)")
        #expect((outsider.1["failedPairings"] as? Int ?? 9) <= 3, "\(outsider.1)")
    }

    /// Two tables of four with different codes in one hall, and a pairwise `--code` exchange
    /// beside them: nobody meets anyone of another group, and nothing fails.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func twoTablesAndAPairInOneHall() throws {
        let teardown = try Self.hosts("mt2", 10)
        defer { teardown() }
        let people = try Self.people(10)
        var runs = try (1...8).map { i in
            try Self.member(in: "mt2\(i)", home: people[i - 1].home, code: i <= 4 ? "41-first-table" : "42-second-table", ["--json", "--expect", "4"])
        }
        for i in 9...10 { runs.append(try Self.exchange(in: "mt2\(i)", home: people[i - 1].home, ["--code", "43-just-a-pair"])) }
        let results = runs.map(Self.result)
        for (i, r) in results.prefix(8).enumerated() {
            let group = i < 4 ? Array(1...4) : Array(5...8)
            let others = group.filter { $0 != i + 1 }.map { "Person \($0)" }.sorted()
            #expect(r.0 == 0, "person \(i + 1): \(r.2)")
            #expect(Self.storedNames(r.1) == others, "person \(i + 1): \(r.2)")
            #expect(try Self.contactNames(people[i]) == others, "person \(i + 1)")
            #expect(r.1["failedPairings"] as? Int == 0 && (r.1["failed"] as? [Any])?.isEmpty == true, "person \(i + 1): \(r.1)")
        }
        for (i, r) in results.suffix(2).enumerated() {
            #expect(r.0 == 0, "pair \(i + 1): \(r.2)")
            #expect(try Self.contactNames(people[8 + i]) == ["Person \(i == 0 ? 10 : 9)"])
        }
    }

    /// A member who starts 5 s after the others pairs with everyone already there.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aLateMemberPairsWithEveryone() throws {
        let teardown = try Self.hosts("mtl", 4)
        defer { teardown() }
        let people = try Self.people(4)
        var runs = try (1...3).map { i in try Self.member(in: "mtl\(i)", home: people[i - 1].home, code: "51-late-table", ["--json", "--expect", "4"]) }
        Thread.sleep(forTimeInterval: 5)
        runs.append(try Self.member(in: "mtl4", home: people[3].home, code: "51-late-table", ["--json", "--expect", "4"]))
        for (i, r) in runs.map(Self.result).enumerated() {
            #expect(r.0 == 0, "person \(i + 1): \(r.2)")
            #expect(Self.storedNames(r.1) == (1...4).filter { $0 != i + 1 }.map { "Person \($0)" }, "person \(i + 1): \(r.2)")
        }
    }

    /// A member killed once it stored its first card: the others finish at --timeout, keep what
    /// they stored, and report the member they did not store (a failed pairing or one heard and gone).
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aMemberKilledHalfway() throws {
        let teardown = try Self.hosts("mtk", 4)
        defer { teardown() }
        let people = try Self.people(4)
        let runs = try (1...3).map { i in
            try Self.member(in: "mtk\(i)", home: people[i - 1].home, code: "61-kill-table", timeout: 25, ["--json", "--expect", "4"])
        }
        let victim = try Self.member(in: "mtk4", home: people[3].home, code: "61-kill-table")
        // Its first "+ NAME" line: one card stored; then it dies at once.
        var seen = Data()
        let handle = victim.1.fileHandleForReading
        while !String(decoding: seen, as: UTF8.self).contains("+ ") {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            seen += chunk
        }
        kill(victim.0.processIdentifier, SIGKILL)
        victim.0.waitUntilExit()
        let results = runs.map(Self.result)
        // Someone paired with the victim before it died (it printed a "+ " line).
        #expect(results.contains { Self.storedNames($0.1).contains("Person 4") }, "\(results.map(\.2))")
        for (i, r) in results.enumerated() {
            let stored = Self.storedNames(r.1)
            let others = (1...3).filter { $0 != i + 1 }.map { "Person \($0)" }
            #expect(others.allSatisfy(stored.contains), "person \(i + 1): \(r.2)")
            #expect(Set(stored).isSubset(of: others + ["Person 4"]), "person \(i + 1): \(stored)")
            if stored.contains("Person 4") {
                #expect(r.0 == 0, "person \(i + 1): \(r.2)")
            } else {
                #expect(r.0 == 75 && r.1["ended"] as? String == "timedOut", "person \(i + 1): \(r.2)")
                // Reported when it was heard; killed fast, on a loaded machine, it may never have been
                // (seen in a fresh-clone run: two members listed nobody). Never anyone else.
                let failed = ((r.1["failed"] as? [[String: Any]]) ?? []).compactMap { $0["peer"] as? String }
                #expect(failed.allSatisfy { $0 == "10.147.0.4" || $0.hasPrefix("fe80:") }, "person \(i + 1): \(failed)")
            }
        }
    }

    /// Five hosts guessing the code (the same N, wrong words), each from its own address: every
    /// honest member allows at most 3 failed pairings, says so, and nobody stores a guesser.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func guessersFromManyAddressesGetThreeTries() throws {
        let teardown = try Self.hosts("mtg", 8)
        defer { teardown() }
        let people = try Self.people(8)
        var runs = try (1...3).map { i in try Self.member(in: "mtg\(i)", home: people[i - 1].home, code: "71-guarded-table", timeout: 60, ["--json", "--expect", "3"]) }
        Thread.sleep(forTimeInterval: 0.3)
        runs += try (4...8).map { i in try Self.member(in: "mtg\(i)", home: people[i - 1].home, code: "71-guess-\(i)-words", timeout: 60, ["--json"]) }
        let results = runs.map(Self.result)
        for (i, r) in results.enumerated() {
            let failed = (r.1["failed"] as? [[String: Any]]) ?? []
            #expect((r.1["failedPairings"] as? Int ?? 9) <= 3 && failed.filter { $0["usedATry"] as? Bool == true }.count <= 3, "host \(i + 1): \(r.1)")
            let stored = Self.storedNames(r.1)
            if i < 3 {
                #expect(Set(stored).isSubset(of: ["Person 1", "Person 2", "Person 3"]), "host \(i + 1): \(stored)")
                #expect(r.0 == 0 || r.0 == 76, "host \(i + 1): \(r.2)")
            } else {
                #expect(stored.isEmpty, "guesser \(i + 1): \(stored)")
            }
            #expect(try Self.contactNames(people[i]).allSatisfy { name in i < 3 ? ["Person 1", "Person 2", "Person 3"].contains(name) : false })
        }
    }

    /// A host replaying every announcement from its own address and under forged session ids: the
    /// table of three still pairs exactly among itself.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func replayedAnnouncementsMoveNobody() throws {
        let teardown = try Self.hosts("mtr", 4)
        defer { teardown() }
        let (attacker, attackerOut) = try Self.attacker(in: "mtr4", "replay-announcements.py", ["--interface-address", "10.147.0.4", "--seconds", "15"])
        defer { if attacker.isRunning { attacker.terminate() } }
        Thread.sleep(forTimeInterval: 0.5)
        let people = try Self.people(3)
        var runs: [(Process, Pipe, Pipe)] = []
        for i in 1...3 {
            runs.append(try Self.member(in: "mtr\(i)", home: people[i - 1].home, code: "81-replayed-table", ["--json", "--expect", "3"]))
            Thread.sleep(forTimeInterval: 0.3)
        }
        for (i, r) in runs.map(Self.result).enumerated() {
            #expect(r.0 == 0, "person \(i + 1): \(r.2)")
            let others = (1...3).filter { $0 != i + 1 }.map { "Person \($0)" }
            let contacts = try Self.contactNames(people[i])
            #expect(Self.storedNames(r.1) == others && contacts == others, "person \(i + 1): \(r.1)")
            #expect(r.1["failedPairings"] as? Int == 0, "person \(i + 1): \(r.1)")
        }
        attacker.waitUntilExit()
        let forged = String(decoding: attackerOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(forged.hasPrefix("forged ") && !forged.hasPrefix("forged 0 "), "the attacker heard nothing to replay: \(forged)")
    }
}
