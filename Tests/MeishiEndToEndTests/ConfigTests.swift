import Foundation
import Testing
@testable import meishi

/// The configuration file: its keys are the defaults of their flags, a flag wins, and a bad file
/// is an error naming the file and the line (exit 78). In-process, with XDG_CONFIG_HOME.
@Suite struct ConfigTests {
    /// Mei with a card holding a public name and a professional email, and a configuration file.
    static func mei(config: String) async throws -> (InProcess, path: String) {
        var mei = InProcess()
        let configHome = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: configHome + "/meishi", withIntermediateDirectories: true)
        let path = configHome + "/meishi/config"
        mei.environment["XDG_CONFIG_HOME"] = configHome
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        #expect(await mei("card", "add", "email", "mei@example.org").status == 0)
        // Written last: every command that opens the home reads it (git reads its config alike).
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        return (mei, path)
    }

    @Test func levelFromTheFileAndTheFlagWins() async throws {
        let (mei, _) = try await Self.mei(config: "level = \"public\"\n")
        let exported = await mei("card", "export")
        #expect(exported.status == 0, "\(exported.err)")
        #expect(!exported.out.contains("mei@example.org"))
        let flagged = await mei("card", "export", "--level", "professional")
        #expect(flagged.out.contains("mei@example.org"))
        // Without the file, the default is professional.
        var plain = mei
        plain.environment["XDG_CONFIG_HOME"] = Fixtures.temporaryDirectory()
        #expect(await plain("card", "export").out.contains("mei@example.org"))
    }

    @Test func fieldsFromTheFileAsAnArray() async throws {
        let (mei, _) = try await Self.mei(config: "fields = [\"name\", \"email\"]\n")
        #expect(await mei("card", "set", "org", "Example Robotics").status == 0)
        let qr = await mei("card", "qr", "--format", "text")
        #expect(qr.status == 0, "\(qr.err)")
        let shown = await mei("card", "export")
        #expect(shown.out.contains("mei@example.org") && shown.out.contains("Mei Tanaka"))
        #expect(!shown.out.contains("Example Robotics"))
        #expect(await mei("card", "export", "--fields", "name,org").out.contains("Example Robotics"))
    }

    @Test func anUnknownKeyNamesTheFileTheLineAndTheNearestKey() async throws {
        let (mei, path) = try await Self.mei(config: "# mine\nlevle = \"public\"\n")
        let r = await mei("card", "export")
        #expect(r.status == 78)
        #expect(r.err == "meishi: error: \(path) line 2: unknown key 'levle'\nmeishi: hint: did you mean 'level'?\n")
        #expect(r.out.isEmpty)
        // A misspelt key with a value of the wrong kind: still the key (the hint used to say
        // to quote the value, and following it gave "unknown key").
        let (unquoted, p2) = try await Self.mei(config: "levle = 3\n")
        let u = await unquoted("card", "export")
        #expect(u.err == "meishi: error: \(p2) line 1: unknown key 'levle'\nmeishi: hint: did you mean 'level'?\n", "\(u.err)")
    }

    @Test func aBadValueIsCheckedAsItsFlagWouldBe() async throws {
        let (mei, path) = try await Self.mei(config: "level = \"public\"\nfriends = \"maybe\"\n")
        let r = await mei("exchange", "--peer", "127.0.0.1:9", "--yes")
        #expect(r.status == 78)
        #expect(r.err.hasPrefix("meishi: error: \(path) line 2: 'friends' must be ecdh, verified, hash or off, not 'maybe'\n"))
        let syntax = try await Self.mei(config: "level = public\n")
        let s = await syntax.0("card", "qr")
        #expect(s.status == 78)
        #expect(s.err.hasPrefix("meishi: error: \(syntax.path) line 1: 'public' is not a value"))
        let kind = try await Self.mei(config: "alias = 7\n")
        #expect(await kind.0("card", "export").err.contains("line 1: 'alias' takes text in double quotes"))
    }

    @Test func friendsFromTheFileMeetsMatchAsTheFlagWould() async throws {
        let (mei, _) = try await Self.mei(config: "friends = \"hash\"\n")
        let r = await mei("exchange", "--peer", "127.0.0.1:9", "--yes", "--match", "emails")
        #expect(r.status == 64)
        #expect(r.err.contains("the configuration file sets hash"))
    }

    @Test func timeoutFromTheFileEndsAListeningExchange() async throws {
        let (mei, _) = try await Self.mei(config: "timeout = 1\n")
        let r = await mei("exchange", "--listen", "--port", "0", "--yes")
        #expect(r.status == 75, "\(r.err)")
        // The wait it announced is the file's, not the default 60 s.
        #expect(r.err.contains("(--timeout 1s)"), "\(r.err)")
    }

    @Test func aBadFileStopsEveryCommandThatOpensTheHome() async throws {
        let (mei, path) = try await Self.mei(config: "levle = \"public\"\n")
        let r = await mei("contacts", "list")
        #expect(r.status == 78)
        #expect(r.err.hasPrefix("meishi: error: \(path) line 1: unknown key 'levle'"))
    }

    @Test func noFileIsNoSettings() throws {
        #expect(Settings.path(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/home/mei"]) == "/home/mei/.config/meishi/config")
        #expect(Settings.path(environment: ["XDG_CONFIG_HOME": "/xdg"]) == "/xdg/meishi/config")
        #expect(Settings.path(environment: [:]) == nil)
    }
}
