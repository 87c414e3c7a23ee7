import Foundation
import Testing

/// Issue 21: what `contacts export` writes is read by other programs — khard (a vdir address
/// book, Debian `khard`) and Python vobject — for every contact of ../shared/corpus/vcard.
@Suite struct VCardExportInteropTests {
    static var corpus: String { ContactsVCardTests.corpus }
    static var corpusPresent: Bool { FileManager.default.fileExists(atPath: corpus) }

    /// A home holding every card of the corpus (kept apart: `--no-merge`), and how many contacts.
    static func corpusHome() throws -> (CLI, count: Int) {
        let cli = try CLI.initialised()
        let files = FileManager.default.enumerator(atPath: corpus)!.compactMap { $0 as? String }.filter { $0.hasSuffix(".vcf") }.sorted()
        for file in files { _ = try cli("contacts", "import", "--no-merge", corpus + "/" + file) }
        let list = try cli("contacts", "list", "--json")
        try #require(list.status == 0, "\(list.stderr)")
        let count = (list.json["contacts"] as? [Any])?.count ?? 0
        try #require(count > 50, "the corpus gave only \(count) contacts")
        return (cli, count)
    }

    static func vcfFiles(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".vcf") }.sorted()
    }

    /// khard's `list -p` over the vdir `dir`: its status, lines and standard error.
    static func khardList(_ dir: String, khard: String) throws -> (status: Int32, lines: [String], stderr: String) {
        let scratch = Fixtures.temporaryDirectory()
        let config = scratch + "/khard.conf"
        try "[addressbooks]\n[[meishi]]\npath = \(dir)\n[vcard]\nskip_unparsable = no\n".write(toFile: config, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: khard)
        p.arguments = ["-c", config, "list", "-p"]
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = scratch
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, o.split(separator: "\n").map(String.init), e)
    }

    @Test(.enabled(if: corpusPresent, "skipped: ../shared/corpus/vcard is not present"))
    func corpusExportIsReadByKhardAndVobject() throws {
        let khard = InteropTests.which("khard")
        let python = CLI.venvPython(importing: "vobject")
        if khard == nil { print("skipped the khard half: khard is not installed (make test installs it)") }
        if python == nil { print("skipped the vobject half: needs .venv with vobject (make test installs it)") }
        guard khard != nil || python != nil else { return }
        let (cli, count) = try Self.corpusHome()
        let scratch = (cli.home as NSString).deletingLastPathComponent
        for version in ["3.0", "4.0"] {
            let dir = scratch + "/vdir-" + version
            let r = try cli("contacts", "export", "--vcard-version", version, "--vdir", dir)
            #expect(r.status == 0, "\(r.stderr)")
            let files = Self.vcfFiles(dir)
            #expect(files.count == count)
            if let khard {
                let k = try Self.khardList(dir, khard: khard)
                #expect(k.status == 0 && k.lines.count == count, "khard read \(k.lines.count) of \(count) (vCard \(version)): \(k.stderr.suffix(800))")
                #expect(!k.stderr.lowercased().contains("error"), "\(k.stderr.suffix(800))")
            }
            if let python {
                // One file of all, as `contacts export -o` writes it: vobject reads every card back.
                let all = scratch + "/all-" + version + ".vcf"
                #expect(try cli("contacts", "export", "--vcard-version", version, "-o", all).status == 0)
                let (status, out) = try InteropTests.run(python, [Fixtures.root.appendingPathComponent("tools/vcard-interop.py").path, all])
                let cards = ((try? JSONSerialization.jsonObject(with: Data(out.utf8))) as? [String: Any])?["cards"] as? [Any]
                #expect(status == 0 && cards?.count == count, "vobject read \(cards?.count ?? 0) of \(count) (vCard \(version)): \(out.suffix(800))")
            }
        }
    }

    /// A home holding Alice Smith and Ken Sato (unsigned, imported), and the path of a vdir for them.
    static func aliceAndKen() throws -> (CLI, String) {
        let cli = try CLI.initialised()
        let book = try cli.file("two.vcf", Data("""
            BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice Smith\r\nEMAIL:alice@example.org\r\nEND:VCARD\r
            BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ken Sato\r\nTEL:+81 90 0000 1111\r\nEND:VCARD\r\n
            """.utf8))
        #expect(try cli("contacts", "import", book).status == 0)
        let dir = (cli.home as NSString).deletingLastPathComponent + "/book"
        return (cli, dir)
    }

    /// A vdir is kept in step: one file per contact named after its UID, rewritten only when the
    /// contact changed, the file of a deleted contact removed, other programs' files left alone.
    @Test func vdirFilesAreStableUpdatedAndPruned() throws {
        let (cli, dir) = try Self.aliceAndKen()
        let first = try cli("contacts", "export", "--vdir", dir)
        #expect(first.status == 0 && first.stderr.contains("2 new, 0 updated, 0 unchanged, 0 removed"), "\(first.stderr)")
        let files = Self.vcfFiles(dir)
        #expect(files.count == 2 && files.allSatisfy { $0.hasPrefix("urn-uuid-") })
        #expect(files.allSatisfy { SecureFileMode.of(dir + "/" + $0) == 0o600 })
        for f in files {
            let text = try String(contentsOfFile: dir + "/" + f, encoding: .utf8)
            #expect(text.contains("\r\nUID:" + f.dropLast(4).replacingOccurrences(of: "urn-uuid-", with: "urn:uuid:") + "\r\n"))
        }
        try "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Someone Else\r\nUID:other\r\nEND:VCARD\r\n".write(toFile: dir + "/other.vcf", atomically: true, encoding: .utf8)
        var inode: [String: UInt64] = [:]
        for f in files { inode[f] = try FileManager.default.attributesOfItem(atPath: dir + "/" + f)[.systemFileNumber] as? UInt64 }

        let again = try cli("contacts", "export", "--vdir", dir)
        #expect(again.stderr.contains("0 new, 0 updated, 2 unchanged, 0 removed"), "\(again.stderr)")
        for f in files { #expect(try FileManager.default.attributesOfItem(atPath: dir + "/" + f)[.systemFileNumber] as? UInt64 == inode[f]) }

        // A contact that changed is rewritten in its own file.
        let more = try cli.file("alice.vcf", Data("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice Smith\r\nEMAIL:alice@example.org\r\nTEL:+1 555 0100\r\nEND:VCARD\r\n".utf8))
        #expect(try cli("contacts", "import", more).status == 0)
        let changed = try cli("contacts", "export", "--vdir", dir)
        #expect(changed.stderr.contains("0 new, 1 updated, 1 unchanged, 0 removed") && Self.vcfFiles(dir).count == 3, "\(changed.stderr)")
        #expect(try files.contains { try String(contentsOfFile: dir + "/" + $0, encoding: .utf8).contains("TEL;VALUE=text:+1 555 0100") })
        // Exporting one contact writes its file and removes none.
        let one = try cli("contacts", "export", "--vdir", dir, "Alice Smith")
        #expect(one.stderr.contains("0 new, 0 updated, 1 unchanged, 0 removed") && Self.vcfFiles(dir).count == 3, "\(one.stderr)")
        #expect(try cli("contacts", "delete", "Ken Sato", "--yes").status == 0)
        #expect(try cli("contacts", "export", "--vdir", dir, "Alice Smith").stderr.contains(" 0 removed"))
        let pruned = try cli("contacts", "export", "--vdir", dir)
        #expect(pruned.stderr.contains(" 1 removed"), "\(pruned.stderr)")
        #expect(Self.vcfFiles(dir).contains("other.vcf") && Self.vcfFiles(dir).count == 2)
        #expect(try cli("contacts", "export", "--vdir", dir, "-o", "x.vcf").status == 64)
    }

    /// Issue 21, second pass: a note added in khard to a file meishi wrote was overwritten by the
    /// next export ("1 updated"), and a copy of a meishi file with its own UID and FN was deleted
    /// ("1 removed": any file holding X-MEISHI-TRUST counted as meishi's). Now meishi records
    /// what it wrote (.meishi-export.json) and keeps what changed since, or what it did not
    /// write, saying so; --overwrite replaces and removes them anyway.
    @Test func vdirKeepsFilesChangedSinceTheLastExport() throws {
        let (cli, dir) = try Self.aliceAndKen()
        #expect(try cli("contacts", "export", "--vdir", dir).status == 0)
        let files = Self.vcfFiles(dir)
        let alice = try #require(try files.first { try String(contentsOfFile: dir + "/" + $0, encoding: .utf8).contains("FN:Alice Smith") })
        let ken = try #require(files.first { $0 != alice })
        // khard adds a note to Alice's file; someone copies Ken's file as a new person of their own.
        let edited = try String(contentsOfFile: dir + "/" + alice, encoding: .utf8)
            .replacingOccurrences(of: "END:VCARD", with: "NOTE:edited in khard\r\nEND:VCARD")
        try edited.write(toFile: dir + "/" + alice, atomically: true, encoding: .utf8)
        let copy = try String(contentsOfFile: dir + "/" + ken, encoding: .utf8)
            .replacingOccurrences(of: "FN:Ken Sato", with: "FN:Kenji Copy")
            .replacingOccurrences(of: "UID:urn:uuid:", with: "UID:urn:uuid:0")
        try copy.write(toFile: dir + "/copy-of-ken.vcf", atomically: true, encoding: .utf8)

        // Alice changes in the store: her file is not rewritten, and the copy is not removed.
        let more = try cli.file("alice.vcf", Data("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice Smith\r\nEMAIL:alice@example.org\r\nTEL:+1 555 0100\r\nEND:VCARD\r\n".utf8))
        #expect(try cli("contacts", "import", more).status == 0)
        let again = try cli("contacts", "export", "--vdir", dir)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("kept 1 file changed since the last export (or not written by meishi): \(alice)"), "\(again.stderr)")
        #expect(again.stderr.contains("0 new, 0 updated, 1 unchanged, 0 removed, 1 kept"), "\(again.stderr)")
        #expect(try String(contentsOfFile: dir + "/" + alice, encoding: .utf8) == edited)
        // Ken deleted: his own file (unchanged since) goes, the copy stays.
        #expect(try cli("contacts", "delete", "Ken Sato", "--yes").status == 0)
        let pruned = try cli("contacts", "export", "--vdir", dir)
        #expect(pruned.stderr.contains("0 updated, 0 unchanged, 1 removed, 1 kept"), "\(pruned.stderr)")
        #expect(Set(Self.vcfFiles(dir)) == [alice, "copy-of-ken.vcf"])
        #expect(try String(contentsOfFile: dir + "/copy-of-ken.vcf", encoding: .utf8) == copy)

        // --overwrite replaces the changed file; the copy, which meishi never wrote, still stays.
        let forced = try cli("contacts", "export", "--vdir", dir, "--overwrite")
        #expect(forced.stderr.contains("0 new, 1 updated, 0 unchanged, 0 removed"), "\(forced.stderr)")
        #expect(try String(contentsOfFile: dir + "/" + alice, encoding: .utf8).contains("TEL;VALUE=text:+1 555 0100"))
        #expect(Set(Self.vcfFiles(dir)) == [alice, "copy-of-ken.vcf"])
        #expect(try cli("contacts", "export", "--overwrite", "-o", dir + "/x.vcf").status == 64)
    }
}

/// The permission bits of a file.
enum SecureFileMode {
    static func of(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? nil
    }
}
