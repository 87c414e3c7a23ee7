import Foundation
import Testing

/// Several meishi processes writing one store at once: none fails with "database is locked",
/// nothing is lost or stored twice.
@Suite struct ConcurrentUseTests {
    static func start(_ cli: CLI, _ arguments: [String]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = arguments
        p.environment = ProcessInfo.processInfo.environment.merging(["MEISHI_HOME": cli.home]) { $1 }
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
}
