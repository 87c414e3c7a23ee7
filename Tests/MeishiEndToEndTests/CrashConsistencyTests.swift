import Foundation
import GRDB
import Testing

/// SIGKILL at random moments, then: the database passes `PRAGMA integrity_check`, no contact is
/// half-written (every row reads back through `contacts list`), and a second run completes with
/// the right counts and no duplicates. `make test` runs a few trials on a small file;
/// `make crash` runs 100 trials each on a 20,000-card file (MEISHI_CRASH_TRIALS, MEISHI_CRASH_CARDS).
@Suite(.serialized) struct CrashConsistencyTests {
    static let trials = Int(ProcessInfo.processInfo.environment["MEISHI_CRASH_TRIALS"] ?? "") ?? 4
    static let cards = Int(ProcessInfo.processInfo.environment["MEISHI_CRASH_CARDS"] ?? "") ?? 1000

    /// A process of the built binary, killed after `delay` seconds unless it ended first.
    /// Returns whether the kill landed before the process ended by itself.
    @discardableResult
    static func runKilled(_ cli: CLI, _ arguments: [String], after delay: Double, environment: [String: String] = [:]) throws -> Bool {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = cli.home
        env.merge(environment) { $1 }
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        usleep(useconds_t(delay * 1_000_000))
        let killed = p.isRunning
        if killed { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return killed
    }

    /// The store's integrity and row count, read with SQLite directly (not through meishi).
    static func inspect(_ home: String) throws -> (integrity: [String], contacts: Int) {
        let path = home + "/meishi.sqlite"
        guard FileManager.default.fileExists(atPath: path) else { return (["ok"], 0) }
        let db = try DatabaseQueue(path: path)
        return try db.read { db in
            // A process killed after creating the file and before its first migration leaves an
            // empty database (the migration is one transaction): no contact table yet, nothing lost.
            let migrated = try Bool.fetchOne(db, sql: "SELECT COUNT(*) > 0 FROM sqlite_master WHERE name = 'contact'") ?? false
            return (try String.fetchAll(db, sql: "PRAGMA integrity_check"),
                    migrated ? try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM contact") ?? 0 : 0)
        }
    }

    /// Every row reads back as a contact, and no DID is stored twice.
    static func contactsReadBack(_ cli: CLI, expecting count: Int? = nil) throws -> Int {
        let r = try cli("contacts", "list", "--json", "--limit", "100000")
        #expect(r.status == 0, "contacts list after a kill: \(r.stderr)")
        let contacts = try #require(r.json["contacts"] as? [[String: Any]])
        let names = contacts.compactMap { $0["name"] as? String }
        #expect(Set(names).count == names.count, "a contact is stored twice")
        if let count { #expect(contacts.count == count) }
        return contacts.count
    }

    /// A fresh home copied from `template` (an identity and a card, made once).
    static func copy(_ template: CLI) throws -> CLI {
        let cli = CLI()
        try FileManager.default.createDirectory(atPath: (cli.home as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: template.home, toPath: cli.home)
        return cli
    }

    static func vcards(_ n: Int) -> Data {
        var s = ""
        s.reserveCapacity(n * 90)
        for i in 0..<n { s += "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Person \(i)\r\nEMAIL:p\(i)@example.org\r\nEND:VCARD\r\n" }
        return Data(s.utf8)
    }

    /// How long a command takes when left alone: kills are spread over that span.
    static func duration(_ cli: CLI, _ arguments: [String]) throws -> Double {
        let start = Date()
        let r = try cli.run(arguments)
        #expect(r.status == 0, "\(arguments): \(r.stderr)")
        return Date().timeIntervalSince(start)
    }

    @Test func killedImportLeavesAllOrNothingAndTheRerunCompletes() throws {
        let template = try CLI.withCard()
        let file = try template.file("book.vcf", Self.vcards(Self.cards))
        let span = try Self.duration(try Self.copy(template), ["contacts", "import", file])
        var killedMidway = 0
        for trial in 0..<Self.trials {
            let cli = try Self.copy(template)
            let delay = span * Double(trial + 1) / Double(Self.trials + 1)
            if try Self.runKilled(cli, ["contacts", "import", file], after: delay) { killedMidway += 1 }
            let state = try Self.inspect(cli.home)
            #expect(state.integrity == ["ok"])
            #expect(state.contacts == 0 || state.contacts == Self.cards, "a killed import left \(state.contacts) of \(Self.cards)")
            _ = try Self.contactsReadBack(cli, expecting: state.contacts)
            let again = try cli("contacts", "import", file, "--json")
            #expect(again.status == 0, "\(again.stderr)")
            _ = try Self.contactsReadBack(cli, expecting: Self.cards)
        }
        #expect(killedMidway > 0, "no kill landed while the import ran")
    }

    @Test func killedScanStoresTheCardOnceOrNotAtAll() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let png = (ken.home as NSString).deletingLastPathComponent + "/ken.png"
        #expect(try ken("card", "qr", "-o", png).status == 0)
        let template = try CLI.withCard()
        let span = try Self.duration(try Self.copy(template), ["scan", png])
        for trial in 0..<Self.trials {
            let cli = try Self.copy(template)
            try Self.runKilled(cli, ["scan", png], after: span * Double(trial + 1) / Double(Self.trials + 1))
            let state = try Self.inspect(cli.home)
            #expect(state.integrity == ["ok"])
            #expect(state.contacts <= 1)
            _ = try Self.contactsReadBack(cli, expecting: state.contacts)
            #expect(try cli("scan", png).status == 0)
            _ = try Self.contactsReadBack(cli, expecting: 1)
        }
    }

    @Test func killedReceivingExchangeStoresNothingHalfWay() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let template = try CLI.withCard()
        for trial in 0..<Self.trials {
            let mei = try Self.copy(template)
            let (listener, port, _, _) = try ExchangeCommandTests.startListener(mei, ["--timeout", "30"])
            let dialer = Process()
            dialer.executableURL = URL(fileURLWithPath: CLI.binary)
            dialer.arguments = ["exchange", "--peer", "127.0.0.1:\(port)", "--yes", "--timeout", "10"]
            dialer.environment = ProcessInfo.processInfo.environment.merging(["MEISHI_HOME": ken.home]) { $1 }
            dialer.standardOutput = FileHandle.nullDevice
            dialer.standardError = FileHandle.nullDevice
            try dialer.run()
            usleep(useconds_t(Double(trial) * 0.06 / Double(Self.trials) * 1_000_000))
            kill(listener.processIdentifier, SIGKILL)
            listener.waitUntilExit()
            dialer.waitUntilExit()
            let state = try Self.inspect(mei.home)
            #expect(state.integrity == ["ok"])
            #expect(state.contacts <= 1)
            _ = try Self.contactsReadBack(mei, expecting: state.contacts)
            // A second exchange completes and the peer is stored once.
            let (again, port2, _, _) = try ExchangeCommandTests.startListener(mei, ["--timeout", "30"])
            #expect(try ken.run(["exchange", "--peer", "127.0.0.1:\(port2)", "--yes"]).status == 0)
            again.waitUntilExit()
            #expect(again.terminationStatus == 0)
            _ = try Self.contactsReadBack(mei, expecting: 1)
        }
    }

    /// `init` killed at any moment: either no key (and `init` works again) or a whole key that
    /// loads; never a truncated key file.
    @Test func killedInitNeverLeavesATruncatedKey() throws {
        let passphrase = ["MEISHI_PASSPHRASE": "correct horse battery staple"]
        let timed = CLI()
        let start = Date()
        #expect(try timed.run(["init", "--passphrase"], extraEnvironment: passphrase).status == 0)
        let initSpan = Date().timeIntervalSince(start)
        for trial in 0..<Self.trials {
            let cli = CLI()
            try Self.runKilled(cli, ["init", "--passphrase"], after: initSpan * Double(trial + 1) / Double(Self.trials + 1),
                               environment: passphrase)
            let id = try cli.run(["id", "--json"], extraEnvironment: passphrase)
            if id.status != 0 {
                #expect(!FileManager.default.fileExists(atPath: cli.home + "/identity.key"),
                        "a killed init left a key that does not load: \(id.stderr)")
                #expect(try cli.run(["init", "--passphrase"], extraEnvironment: passphrase).status == 0)
                #expect(try cli.run(["id"], extraEnvironment: passphrase).status == 0)
            }
        }
    }
}

extension CrashConsistencyTests {
    /// `passphrase change` killed at any moment: the identity and the Solidarity key both open
    /// with the old passphrase or both with the new one; nothing is lost.
    @Test func killedPassphraseChangeKeepsTheKeysUsable() throws {
        let old = ["MEISHI_PASSPHRASE": "old passphrase one"]
        let new = ["MEISHI_PASSPHRASE": "new passphrase two"]
        let change = old.merging(["MEISHI_NEW_PASSPHRASE": "new passphrase two"]) { $1 }
        let template = CLI()
        #expect(try template.run(["init", "--passphrase"], extraEnvironment: old).status == 0)
        #expect(try template.run(["card", "set", "name", "Mei Tanaka"], extraEnvironment: old).status == 0)
        let png = (template.home as NSString).deletingLastPathComponent + "/solidarity.png"
        let made = try template.run(["card", "qr", "--solidarity", "-o", png], extraEnvironment: old)
        #expect(made.status == 0, "\(made.stderr)")
        let did = try template.run(["id", "--json"], extraEnvironment: old).json["did"] as? String
        let timed = try Self.copy(template)
        let start = Date()
        let full = try timed.run(["passphrase", "change"], extraEnvironment: change)
        #expect(full.status == 0, "\(full.stderr)")
        let span = Date().timeIntervalSince(start)
        for trial in 0..<Self.trials {
            let cli = try Self.copy(template)
            try Self.runKilled(cli, ["passphrase", "change"], after: span * Double(trial + 1) / Double(Self.trials + 1), environment: change)
            // `card export` signs, so it needs the secret key (`id` reads only the public part).
            let withOld = try cli.run(["card", "export"], extraEnvironment: old)
            let withNew = try cli.run(["card", "export"], extraEnvironment: new)
            #expect((withOld.status == 0) != (withNew.status == 0), "old: \(withOld.stderr) new: \(withNew.stderr)")
            let working = withOld.status == 0 ? old : new
            #expect(try cli.run(["id", "--json"], extraEnvironment: working).json["did"] as? String == did)
            let qr = try cli.run(["card", "qr", "--solidarity", "-o", png + ".\(trial).png"], extraEnvironment: working)
            #expect(qr.status == 0, "the Solidarity key no longer opens with the identity's passphrase: \(qr.stderr)")
        }
    }
}

extension CrashConsistencyTests {
    /// Ken's home with `count` notes from Mei that expire `ttl` seconds after they were sent.
    static func inboxWithNotes(_ count: Int, ttl: String) throws -> (ken: CLI, mei: CLI) {
        let (mei, ken, listener, err, listenPort) = try AttackerTests.kenListening()
        for i in 0..<count {
            let r = try mei("send", "Ken", "note \(i) for the purge test", "--peer", "127.0.0.1:\(listenPort)", "--ttl", ttl)
            try #require(r.status == 0, "\(r.stderr)")
        }
        _ = AttackerTests.stop(listener, err)
        return (ken, mei)
    }

    /// `inbox --purge` killed at any moment: the store stays whole, the rerun deletes every expired
    /// note, and none is ever shown after it expired.
    @Test func killedPurgeLeavesAWholeStoreAndTheRerunFinishes() throws {
        let (template, _) = try Self.inboxWithNotes(12, ttl: "2s")
        sleep(3)  // every note has expired
        let timed = try Self.copy(template)
        let span = max(0.05, try Self.duration(timed, ["inbox", "--purge"]))
        for trial in 0..<Self.trials {
            let cli = try Self.copy(template)
            try Self.runKilled(cli, ["inbox", "--purge"], after: span * Double(trial + 1) / Double(Self.trials + 1))
            let state = try Self.inspect(cli.home)
            #expect(state.integrity == ["ok"])
            let again = try cli("inbox", "--purge", "--json")
            #expect(again.status == 0, "\(again.stderr)")
            let left = try cli("inbox", "--all", "--json")
            #expect((left.json["messages"] as? [[String: Any]])?.isEmpty == true, "\(left.stdout)")
            _ = try Self.contactsReadBack(cli, expecting: 1)
        }
    }
}
