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

/// Ending a table from its terminal (`script`, as ExchangePromptTests): Enter or Ctrl-D.
extension NamespaceExchangeTests {
    static var canRunOnTerminal: Bool { ExchangePromptTests.script != nil && canRun }

    /// Person 1 is on a terminal without --expect; Persons 2 and 3 join with --expect 3, and a
    /// fourth host with a wrong code fails to pair with everyone. Once Person 1's screen shows both
    /// and the failed pairing, the person presses `key`: the run ends at once, lists the two
    /// stored and the failed pairing, and exits 0 (ended by the person; only --timeout is an error).
    /// Ctrl-C too, as `listen` stops: before, it ended the run with 130 and no word of who was stored.
    @Test(.enabled(if: canRunOnTerminal, "skipped: needs script(1), root and iproute2 (network namespaces)"),
          arguments: [("enter", "\n"), ("ctrl-d", "\u{04}"), ("ctrl-c", "\u{03}")])
    func theTerminalEndsATable(_ key: (name: String, bytes: String)) throws {
        let prefix = ["enter": "mte", "ctrl-d": "mtd", "ctrl-c": "mtc"][key.name]!
        let teardown = try Self.hosts(prefix, 4)
        defer { teardown() }
        let people = try Self.people(4)
        let code = ["enter": "91-ends-by-enter", "ctrl-d": "92-ends-by-ctrl-d", "ctrl-c": "98-ends-by-ctrl-c"][key.name]!
        let host = try ExchangePromptTests.OnTerminal(people[0], ["exchange", "--table", code, "--timeout", "120"], namespace: "\(prefix)1")
        defer { if host.process.isRunning { host.process.terminate() } }
        #expect(host.waitFor("it ends when you press Enter or after 120s") != nil, "\(host.shown)")
        let others = try (2...3).map { i in try Self.member(in: "\(prefix)\(i)", home: people[i - 1].home, code: code, ["--json", "--expect", "3"]) }
        let outsider = try Self.member(in: "\(prefix)4", home: people[3].home, code: code.replacingOccurrences(of: "-ends-", with: "-guess-"),
                                       timeout: 60, ["--json"])
        for pattern in [#"\+ Person 2 \(z6Mk…"#, #"\+ Person 3 \(z6Mk…"#, #"someone at (10\.147\.0\.4|fe80:[0-9a-f:%a-z]+) failed to pair: the codes do not match \(1 of 3"#] {
            #expect(host.waitFor(pattern, seconds: 60) != nil, "\(pattern) never showed:\n\(host.shown)")
        }
        let before = host.shown
        #expect(host.process.isRunning && !before.contains("Stored "), "the table ended before the key:\n\(before)")
        host.typing.fileHandleForWriting.write(Data(key.bytes.utf8))
        #expect(host.exited(within: 20), "\(key.name) did not end the table:\n\(host.shown)")
        #expect(host.process.terminationStatus == 0, "\(host.shown)")
        let end = String(host.shown.dropFirst(before.count))
        #expect(end.contains("Stored 2 people (met) in "), "\(end)")
        // After ^C (which the terminal echoes) too, the report starts a line.
        #expect(end.range(of: #"(^|\n)Stored 2 people"#, options: .regularExpression) != nil, "\(end.debugDescription)")
        #expect(end.range(of: #"#\d+ Person 2 \(z6Mk…"#, options: .regularExpression) != nil
                && end.range(of: #"#\d+ Person 3 \(z6Mk…"#, options: .regularExpression) != nil, "\(end)")
        // The outsider's address as its pairing came: IPv4, or IPv6 link-local (discovery hears both).
        #expect(end.range(of: #"Failed: (10\.147\.0\.4|fe80:[0-9a-f:%a-z]+): the codes do not match \(a failed pairing\)"#,
                           options: .regularExpression) != nil, "\(end)")
        #expect(end.contains("Failed pairings: 1 of 3") && !end.contains("meishi: error"), "\(end)")
        #expect(try Self.contactNames(people[0]) == ["Person 2", "Person 3"])
        for (i, r) in others.map(Self.result).enumerated() {
            #expect(r.0 == 0 && Self.storedNames(r.1) == [1, 2, 3].filter { $0 != i + 2 }.map { "Person \($0)" }, "person \(i + 2): \(r.2)")
        }
        let guessed = Self.result(outsider)
        let guesserContacts = try Self.contactNames(people[3])
        #expect(Self.storedNames(guessed.1).isEmpty && guesserContacts.isEmpty, "\(guessed.1)")
    }
}

/// A table's code serves one table (issue 24, PROTOCOL.md §5.7): once a table paired someone,
/// its members refuse the code, so whoever heard it read out cannot join a later table.
extension NamespaceExchangeTests {
    /// Run alone, nobody comes: the code stays usable. Then a table of two with it: run again, each
    /// member is refused at once (exit 64, the code written another way too), before announcing.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aTablesCodeServesOneTable() throws {
        let teardown = try Self.hosts("mts", 2)
        defer { teardown() }
        let people = try Self.people(2)
        let alone = Self.result(try Self.member(in: "mts1", home: people[0].home, code: "93-served-once", timeout: 2, ["--json"]))
        #expect(alone.0 == 75 && alone.1["ended"] as? String == "timedOut", "\(alone.1) \(alone.2)")
        let runs = try (1...2).map { i in try Self.member(in: "mts\(i)", home: people[i - 1].home, code: "93-served-once", ["--json", "--expect", "2"]) }
        for (i, r) in runs.map(Self.result).enumerated() {
            #expect(r.0 == 0 && Self.storedNames(r.1) == ["Person \(2 - i)"], "person \(i + 1): \(r.2)")
        }
        for i in 1...2 {
            let again = Self.result(try Self.member(in: "mts\(i)", home: people[i - 1].home, code: " 93-Served-ONCE", timeout: 20))
            #expect(again.0 == 64, "person \(i): \(again.2)")
            #expect(again.2.hasPrefix("meishi: error: code 93-served-once was used at a table on ")
                    && again.2.contains("a table's code serves one table\nmeishi: hint: make a new code with 'meishi exchange --table'"),
                    "person \(i): \(again.2)")
            #expect(!again.2.contains("at table 93"), "person \(i): \(again.2)")
        }
        // Another code still makes a table.
        let fresh = try (1...2).map { i in try Self.member(in: "mts\(i)", home: people[i - 1].home, code: "94-served-once", ["--json", "--expect", "2"]) }
        #expect(fresh.map(Self.result).allSatisfy { $0.0 == 0 })
    }
}

extension ExchangeCommandTests {
    /// A table of two (`--listen`/`--peer` with `--table`) spends its code too: the listener run
    /// again with it is refused (exit 64), and so is the dialler.
    @Test func aTableOfTwoSpendsItsCode() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let listener = Process()
        listener.executableURL = URL(fileURLWithPath: CLI.binary)
        listener.arguments = ["--home", mei.home, "exchange", "--listen", "--port", "0", "--table", "95-two-at-a-table", "--timeout", "60"]
        let err = Pipe()
        listener.standardError = err
        listener.standardOutput = FileHandle.nullDevice
        listener.standardInput = FileHandle.nullDevice
        try listener.run()
        // "on the other machine run: meishi exchange --peer HOST:PORT --table CODE"
        var log = ""
        while !log.contains(" --table 95-two-at-a-table\n"), listener.isRunning {
            log += String(decoding: err.fileHandleForReading.availableData, as: UTF8.self)
        }
        let port = try #require(log.firstMatch(of: /--peer \S+:(\d+) --table/)?.1, "\(log)")
        let dial = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--table", "95-two-at-a-table", "--timeout", "20"])
        listener.waitUntilExit()
        log += String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(dial.status == 0 && listener.terminationStatus == 0, "\(dial.stderr)\n\(log)")
        for (cli, args) in [(mei, ["--listen", "--port", "0"]), (ken, ["--peer", "127.0.0.1:\(port)"])] {
            let again = try cli.run(["exchange"] + args + ["--table", "95-two-at-a-table", "--timeout", "5"])
            #expect(again.status == 64 && again.stderr.contains("code 95-two-at-a-table was used at a table on "), "\(again.stderr)")
        }
    }
}

extension NamespaceExchangeTests {
    /// A person who mistyped the code fails with each of three members and is told to check the
    /// code (not only that someone may be guessing it), exit 76, nothing stored. The members,
    /// without --expect, are then ended by SIGTERM as by Enter: each reports the two it stored
    /// and the failed pairing, exit 0 (before, SIGTERM and Ctrl-C ended the run without a word).
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func aMistyperIsToldToCheckTheCode() throws {
        let teardown = try Self.hosts("mtm", 4)
        defer { teardown() }
        let people = try Self.people(4)
        let members = try (1...3).map { i in try Self.member(in: "mtm\(i)", home: people[i - 1].home, code: "97-typed-right", ["--json"]) }
        defer { for m in members where m.0.isRunning { m.0.terminate() } }
        let mistyped = Self.result(try Self.member(in: "mtm4", home: people[3].home, code: "97-typed-rigth", timeout: 90, ["--json"]))
        #expect(mistyped.0 == 76 && mistyped.1["ended"] as? String == "triesSpent", "\(mistyped.1) \(mistyped.2)")
        let error = mistyped.1["error"] as? String ?? ""
        #expect(error.contains("none completed: the code typed here may not be the one read out, or someone is guessing it"), "\(error)")
        #expect(Self.storedNames(mistyped.1).isEmpty)
        // Everyone has met everyone else once each member shows the two others (stored as they pair).
        let deadline = Date().addingTimeInterval(60)
        while try (0..<3).contains(where: { try Self.contactNames(people[$0]).count < 2 }), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        for m in members { m.0.terminate() }
        for (i, r) in members.map(Self.result).enumerated() {
            #expect(r.0 == 0 && r.1["ended"] as? String == "stopped", "person \(i + 1): \(r.1) \(r.2)")
            #expect(Self.storedNames(r.1) == (1...3).filter { $0 != i + 1 }.map { "Person \($0)" }, "person \(i + 1): \(r.1)")
            let failed = ((r.1["failed"] as? [[String: Any]]) ?? []).compactMap { $0["peer"] as? String }
            #expect(failed.count == 1 && failed.allSatisfy { $0 == "10.147.0.4" || $0.hasPrefix("fe80:") }, "person \(i + 1): \(r.1)")
        }
    }
}

extension NamespaceExchangeTests {
    /// Person 1 runs the table on two machines with one home (a laptop and a phone of one
    /// identity), Person 2 on a third. Person 1's two runs pair with each other too: that is not a
    /// contact to store and does not end their table (before, each ended with only "that is your
    /// own card", its report lost); Person 2 lists Person 1 once, not once per device.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func oneIdentityOnTwoDevicesAtATable() throws {
        let teardown = try Self.hosts("mto", 3)
        defer { teardown() }
        let people = try Self.people(2)
        let homes = [people[0].home, people[0].home, people[1].home]
        let runs = try (1...3).map { i in try Self.member(in: "mto\(i)", home: homes[i - 1], code: "99-two-devices", ["--json", "--expect", "3"]) }
        let results = runs.map(Self.result)
        for r in results.prefix(2) {
            #expect(r.0 == 0 && Self.storedNames(r.1) == ["Person 2"], "\(r.1) \(r.2)")
            let reasons = ((r.1["failed"] as? [[String: Any]]) ?? []).compactMap { $0["reason"] as? String }
            #expect(reasons == ["that is your own card (another meishi of yours at this table); not stored"], "\(r.1)")
        }
        #expect(results[2].0 == 0 && Self.storedNames(results[2].1) == ["Person 1"], "\(results[2].1) \(results[2].2)")
        #expect(try Self.contactNames(people[0]) == ["Person 2"] && Self.contactNames(people[1]) == ["Person 1"])
    }
}

extension NamespaceExchangeTests {
    /// Eight people with --expect 2, three times: each ends after its first pairing, while
    /// pairings with the others are in progress. Those complete (the table starts no new one):
    /// nobody is charged a try for a pairing an honest member cut by ending, and each pair is
    /// stored both ways or neither. Before, ending cut them ("connection lost before the peer's
    /// acknowledgement (1 of 3 failed pairings)" on the other side; seen in 1 run of 3 of six
    /// hosts). A member left with nobody to pair with ends at --timeout having stored nobody.
    @Test(.enabled(if: canRun, "skipped: needs root and iproute2 to create network namespaces (CI runs as root)"))
    func anEndedTableLetsPairingsInProgressFinish() throws {
        let teardown = try Self.hosts("mtf", 8)
        defer { teardown() }
        let people = try Self.people(8)
        for round in 1...3 {
            let runs = try (1...8).map { i in
                try Self.member(in: "mtf\(i)", home: people[i - 1].home, code: "8\(round)-more-than-wanted", timeout: 10, ["--json", "--expect", "2"])
            }
            let results = runs.map(Self.result)
            var stored: [Set<String>] = []
            for (i, r) in results.enumerated() {
                let names = Self.storedNames(r.1)
                #expect(r.0 == 0 ? r.1["ended"] as? String == "expected" : r.0 == 75 && names.isEmpty, "round \(round), person \(i + 1): \(r.1) \(r.2)")
                #expect(r.1["failedPairings"] as? Int == 0, "round \(round), person \(i + 1): \(r.1)")
                stored.append(Set(names))
            }
            for i in 0..<8 {
                for j in 0..<8 where i != j {
                    #expect(stored[i].contains("Person \(j + 1)") == stored[j].contains("Person \(i + 1)"),
                            "round \(round): person \(i + 1) stored \(stored[i].sorted()), person \(j + 1) \(stored[j].sorted())")
                }
            }
        }
    }
}

extension ExchangeCommandTests {
    /// An unknown --fields is refused before anything is said of the table (before, "at table 7:
    /// each person is shown as they join…" came first, and with --table alone a code to read out).
    @Test func aTableWithAnUnknownFieldSaysNothingOfTheTable() throws {
        let mei = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        for table in [["--table", "7-tulip-anchor"], ["--table"]] {
            let r = try mei.run(["exchange"] + table + ["--fields", "name,bogus", "--timeout", "5"])
            #expect(r.status == 64 && r.stderr.hasPrefix("meishi: error: unknown field \"bogus\""), "\(r.stderr)")
            #expect(!r.stderr.contains("table"), "\(r.stderr)")
        }
    }
}
