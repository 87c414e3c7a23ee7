import Foundation
import Testing

/// Several meishi processes writing one store at once: none fails with "database is locked",
/// nothing is lost or stored twice.
@Suite struct ConcurrentUseTests {
    static func start(_ cli: CLI, _ arguments: [String], environment: [String: String] = [:]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = arguments
        var env = ProcessInfo.processInfo.environment.merging(["MEISHI_HOME": cli.home]) { $1 }
        env["MEISHI_PASSPHRASE"] = nil
        p.environment = env.merging(environment) { $1 }
        let err = Pipe()
        p.standardOutput = FileHandle.nullDevice
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return (p, err)
    }

    static func finish(_ p: (Process, Pipe), _ what: String) {
        let log = String(decoding: p.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.0.waitUntilExit()
        #expect(p.0.terminationStatus == 0, "\(what): \(log)")
        #expect(!log.contains("locked"), "\(what): \(log)")
    }

    @Test func importScanExchangePurgeAndImportAtOnce() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let cleo = try CLI.withCard(name: "Cleo Park", email: "cleo@example.org")
        let png = (cleo.home as NSString).deletingLastPathComponent + "/cleo.png"
        #expect(try cleo("card", "qr", "-o", png).status == 0)
        let first = try mei.file("first.vcf", CrashConsistencyTests.vcards(1200))
        var second = ""
        for i in 0..<800 { second += "BEGIN:VCARD\nVERSION:4.0\nFN:Other \(i)\nTEL:+1555010\(String(format: "%04d", i))\nEND:VCARD\n" }
        let secondFile = try mei.file("second.vcf", Data(second.utf8))

        // Mei also holds notes from Ken that have expired, for a purging process.
        try #require(try mei("contacts", "add", try ken.file("ken.json", try ken.export())).status == 0)
        try #require(try ken("contacts", "add", try mei.file("mei.json", try mei.export())).status == 0)
        let (listener, port, _, _) = try ExchangeCommandTests.startListener(mei, ["--timeout", "60"])
        let purging = try Self.start(mei, ["inbox", "--purge"])
        let importing = try Self.start(mei, ["contacts", "import", first])
        let importingMore = try Self.start(mei, ["contacts", "import", secondFile])
        let scanning = try Self.start(mei, ["scan", png])
        let dial = try ken.run(["exchange", "--peer", "127.0.0.1:\(port)", "--yes"])
        #expect(dial.status == 0, "\(dial.stderr)")
        listener.waitUntilExit()
        #expect(listener.terminationStatus == 0)
        Self.finish(importing, "import")
        Self.finish(importingMore, "second import")
        Self.finish(scanning, "scan")
        Self.finish(purging, "purge")
        let state = try CrashConsistencyTests.inspect(mei.home)
        #expect(state.integrity == ["ok"])
        _ = try CrashConsistencyTests.contactsReadBack(mei, expecting: 1200 + 800 + 2)  // Ken once, Cleo once
    }

    /// Issue 21: four imports on a home without a store failed one or two at a time with "table
    /// message already exists" (two processes ran the same migration). Twenty processes of mixed
    /// commands now start together on a home whose store does not exist yet: one migrates, the
    /// others wait for it, all exit 0 and the store is whole.
    @Test func twentyCommandsOnAFreshStoreAtOnce() throws {
        let mei = try CLI.withCard()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let kenCard = try mei.file("ken.json", try ken.export())
        for suffix in ["", "-wal", "-shm", "-migration.lock"] { try? FileManager.default.removeItem(atPath: mei.home + "/meishi.sqlite" + suffix) }
        var files: [String] = []
        for f in 0..<6 {
            var text = ""
            for i in 0..<50 { text += "BEGIN:VCARD\nVERSION:4.0\nFN:Person \(f)-\(i)\nEMAIL:p\(f)-\(i)@example.org\nEND:VCARD\n" }
            files.append(try mei.file("batch\(f).vcf", Data(text.utf8)))
        }
        let commands: [[String]] = files.map { ["contacts", "import", $0] } + [
            ["contacts", "list"], ["contacts", "list", "--json"], ["contacts", "add", kenCard], ["friends"], ["inbox"],
            ["contacts", "add", kenCard], ["friends", "--json"], ["inbox", "--json"], ["contacts", "list"], ["inbox", "--purge"],
            ["contacts", "export", "-o", mei.home + "/../export.vcf"], ["contacts", "list", "--trust", "signed"],
            ["inbox"], ["contacts", "list"],
        ]
        #expect(commands.count == 20)
        let running = try commands.map { try Self.start(mei, $0) }
        for (p, command) in zip(running, commands) { Self.finish(p, command.joined(separator: " ")) }
        let state = try CrashConsistencyTests.inspect(mei.home)
        #expect(state.integrity == ["ok"])
        _ = try CrashConsistencyTests.contactsReadBack(mei, expecting: 6 * 50 + 1)
    }

    /// The card's values of `field`, from `card show --json`.
    static func values(_ cli: CLI, _ field: String) throws -> [String] {
        let fields = try cli("card", "show", "--json").json["fields"] as? [String: Any]
        return ((fields?[field] as? [[String: Any]]) ?? []).compactMap { $0["value"] as? String }
    }

    /// Issue 21, second pass: five `card add email` at once all said they had added theirs, and
    /// one email survived (each read the card, added one and wrote back what it read). Sixteen
    /// card commands now start together: every change is on the card.
    @Test func cardChangesAtOnceAreAllKept() throws {
        let mei = try CLI.withCard()
        let commands: [[String]] = (0..<10).map { ["card", "add", "email", "u\($0)@example.org"] }
            + (0..<4).map { ["card", "add", "phone", "+1 555 010\($0)"] }
            + [["card", "set", "title", "Engineer"], ["card", "set", "org", "Acme"]]
        let running = try commands.map { try Self.start(mei, $0) }
        for (p, command) in zip(running, commands) { Self.finish(p, command.joined(separator: " ")) }
        #expect(Set(try Self.values(mei, "email")) == Set(["mei.tanaka@example.org"] + (0..<10).map { "u\($0)@example.org" }))
        #expect(try Self.values(mei, "phone").count == 1 + 4)
        #expect(try Self.values(mei, "title") == ["Engineer"])
        #expect(try Self.values(mei, "org") == ["Acme"])
    }

    /// Two `passphrase set` at once both said they had set theirs, and one of the two passphrases
    /// then failed. Now one of six sets its passphrase, the others see the key is encrypted
    /// already and refuse, and the passphrase of the one that succeeded opens the key.
    @Test func passphraseSetAtOnceLeavesOneThatWorks() throws {
        let mei = try CLI.withCard()
        let running = try (0..<6).map { n in
            try Self.start(mei, ["passphrase", "set"], environment: ["MEISHI_NEW_PASSPHRASE": "passphrase number \(n)"])
        }
        var succeeded: [Int] = []
        for (n, p) in running.enumerated() {
            let log = String(decoding: p.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.0.waitUntilExit()
            if p.0.terminationStatus == 0 { succeeded.append(n) } else { #expect(log.contains("already"), "\(log)") }
        }
        #expect(succeeded.count == 1, "\(succeeded.count) of 6 said they set the passphrase")
        let n = try #require(succeeded.first)
        let opened = try mei.run(["card", "export", "-o", mei.home + "/../card.json"],
                                 extraEnvironment: ["MEISHI_PASSPHRASE": "passphrase number \(n)"])
        #expect(opened.status == 0, "the passphrase that was said to be set does not open the key: \(opened.stderr)")
    }

    /// A shell script as EDITOR that writes where it was started, waits for `go`, then appends
    /// `line` to the file it was given.
    static func waitingEditor(_ dir: String, _ name: String, appending line: String) -> String {
        "echo \"$1\" > \(dir)/\(name).started; while [ ! -f \(dir)/go ]; do sleep 0.05; done; echo '\(line)' >>"
    }

    static func waitFor(_ path: String) throws {
        for _ in 0..<400 where !FileManager.default.fileExists(atPath: path) { usleep(25_000) }
        try #require(FileManager.default.fileExists(atPath: path), "\(path) never appeared")
    }

    /// A change made while `card edit` is open was undone when the editor saved. Now the edit is
    /// checked against the card it started from: the card changed, so it is refused (exit 75),
    /// says which field changed and keeps the edited text in its file.
    @Test func aChangeMadeWhileTheEditorIsOpenIsNotUndone() throws {
        let mei = try CLI.withCard()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let editing = try Self.start(mei, ["card", "edit"],
                                     environment: ["EDITOR": Self.waitingEditor(dir, "one", appending: "title: From the editor"), "VISUAL": ""])
        try Self.waitFor(dir + "/one.started")
        let set = try mei("card", "set", "org", "Acme")
        #expect(set.status == 0, "\(set.stderr)")
        FileManager.default.createFile(atPath: dir + "/go", contents: nil)
        let log = String(decoding: editing.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        editing.0.waitUntilExit()
        #expect(editing.0.terminationStatus == 75, "\(log)")
        #expect(log.contains("your card changed while the editor was open (org)"), "\(log)")
        #expect(try Self.values(mei, "org") == ["Acme"])
        #expect(try Self.values(mei, "title") == [])
        let kept = try String(contentsOfFile: String(contentsOfFile: dir + "/one.started", encoding: .utf8)
            .trimmingCharacters(in: .newlines), encoding: .utf8)
        #expect(kept.contains("title: From the editor"))
    }

    /// Trial 7, F13: `contacts edit` saved over a note and a tag written by `contacts note` and
    /// `contacts tag` while its editor was open. Now, as `card edit`, it is refused (exit 75),
    /// names what changed, keeps what was written meanwhile and the edited text in its file.
    @Test func aNoteWrittenWhileContactsEditIsOpenIsNotUndone() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let mei = try CLI.withCard()
        #expect(try ken("contacts", "add", try ken.file("mei.json", try mei.export())).status == 0)
        #expect(try ken("contacts", "note", "1", "the old note").status == 0)
        let dir = (ken.home as NSString).deletingLastPathComponent
        // The editor: another command writes a note and a tag, then the edit appends to the note.
        let editor = "echo \"$1\" > \(dir)/edit.started; '\(CLI.binary)' contacts note 1 'written meanwhile' >/dev/null && "
            + "'\(CLI.binary)' contacts tag 1 added-meanwhile >/dev/null && echo 'from the editor' >>"
        let editing = try Self.start(ken, ["contacts", "edit", "1"], environment: ["EDITOR": editor, "VISUAL": ""])
        let log = String(decoding: editing.1.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        editing.0.waitUntilExit()
        #expect(editing.0.terminationStatus == 75, "\(log)")
        #expect(log.contains("your note and tags on this contact changed while the editor was open"), "\(log)")
        #expect(try ken("contacts", "note", "1").stdout == "written meanwhile\n")
        #expect(try ken("contacts", "show", "1").stdout.contains("your tags: added-meanwhile\n"))
        let kept = try String(contentsOfFile: String(contentsOfFile: dir + "/edit.started", encoding: .utf8)
            .trimmingCharacters(in: .newlines), encoding: .utf8)
        #expect(kept.contains("the old note\nfrom the editor"), "\(kept)")
    }

    /// Two `card edit` at once shared one file, `card-edit.txt`: each now has its own (mode
    /// 0600), the first save is kept and the second, made on the card as it was, is refused.
    @Test func twoEditSessionsHaveTheirOwnFiles() throws {
        let mei = try CLI.withCard()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let sessions = try ["one", "two"].map { name in
            try Self.start(mei, ["card", "edit"],
                           environment: ["EDITOR": Self.waitingEditor(dir, name, appending: "title: Title from \(name)"), "VISUAL": ""])
        }
        try Self.waitFor(dir + "/one.started")
        try Self.waitFor(dir + "/two.started")
        let files = try ["one", "two"].map {
            try String(contentsOfFile: dir + "/\($0).started", encoding: .utf8).trimmingCharacters(in: .newlines)
        }
        #expect(files[0] != files[1], "both sessions edit \(files[0])")
        for f in files { #expect((try FileManager.default.attributesOfItem(atPath: f)[.posixPermissions] as? Int) == 0o600) }
        FileManager.default.createFile(atPath: dir + "/go", contents: nil)
        var statuses: [Int32] = []
        for s in sessions {
            _ = s.1.fileHandleForReading.readDataToEndOfFile()
            s.0.waitUntilExit()
            statuses.append(s.0.terminationStatus)
        }
        #expect(statuses.sorted() == [0, 75])
        let saved = statuses[0] == 0 ? "one" : "two"
        #expect(try Self.values(mei, "title") == ["Title from \(saved)"])
    }
}
