import Foundation
import Testing
import MeishiCrypto
import MeishiKeyring
@testable import meishi

/// The passphrase agent on the kernel's session keyring (`--remember`, `remember`, `meishi lock`),
/// against the real keyring of this test process. Serialized: `lock` forgets every meishi key of
/// the session.
@Suite(.serialized) struct AgentTests {
    static let passphrase = "correct horse battery"

    /// Mei with an identity sealed under `passphrase`, and no passphrase for later commands.
    static func mei() async throws -> InProcess {
        var mei = InProcess()
        mei.environment["MEISHI_PASSPHRASE"] = passphrase
        #expect(await mei("init", "--passphrase").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        mei.environment["MEISHI_PASSPHRASE"] = nil
        return mei
    }

    /// The name the agent keeps identity.key's key under: its salt.
    static func keptName(_ mei: InProcess) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: mei.home + "/identity.key"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return "kek:" + (try #require(json["salt"] as? String))
    }

    static var keyringAvailable: Bool { (try? SessionKeyring.sessionKeyring()) != nil }

    @Test func aRememberedKeyOpensTheIdentityUntilLock() async throws {
        guard Self.keyringAvailable else { print("skipped: no session keyring for this process"); return }
        var mei = try await Self.mei()
        #expect(await mei("card", "export").status == 77)
        mei.environment["MEISHI_PASSPHRASE"] = Self.passphrase
        #expect(await mei("card", "export", "--remember", "1m").status == 0)
        // What is kept is Argon2id's key, not the passphrase.
        let kept = try #require(SessionKeyring.read(name: try Self.keptName(mei)))
        #expect(kept.count == 32)
        #expect(kept != SecureBytesFixture.of(Self.passphrase))
        mei.environment["MEISHI_PASSPHRASE"] = nil
        let later = await mei("card", "export")
        #expect(later.status == 0, "\(later.err)")
        #expect(later.out.contains("Mei Tanaka"))
        #expect(await mei("lock").out == "forgot 1 remembered key\n")
        #expect(await mei("card", "export").status == 77)
        #expect(await mei("lock", "--json").out.contains("\"forgotten\": 0"))
    }

    @Test func aRememberedKeyExpires() async throws {
        guard Self.keyringAvailable else { print("skipped: no session keyring for this process"); return }
        var mei = try await Self.mei()
        mei.environment["MEISHI_PASSPHRASE"] = Self.passphrase
        #expect(await mei("card", "export", "--remember", "1s").status == 0)
        mei.environment["MEISHI_PASSPHRASE"] = nil
        try await Task.sleep(for: .seconds(2.2))
        #expect(SessionKeyring.read(name: try Self.keptName(mei)) == nil)
        #expect(await mei("card", "export").status == 77)
        _ = SessionKeyring.removeAll()
    }

    @Test func offByDefaultAndOnFromTheConfigurationFile() async throws {
        guard Self.keyringAvailable else { print("skipped: no session keyring for this process"); return }
        var mei = try await Self.mei()
        mei.environment["MEISHI_PASSPHRASE"] = Self.passphrase
        #expect(await mei("card", "export").status == 0)
        #expect(SessionKeyring.read(name: try Self.keptName(mei)) == nil)
        let configHome = Fixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: configHome + "/meishi", withIntermediateDirectories: true)
        try "remember = \"10m\"\n".write(toFile: configHome + "/meishi/config", atomically: true, encoding: .utf8)
        mei.environment["XDG_CONFIG_HOME"] = configHome
        #expect(await mei("card", "export").status == 0)
        #expect(SessionKeyring.read(name: try Self.keptName(mei)) != nil)
        // The flag wins: 0 keeps nothing more (what is kept stays until lock).
        #expect(await mei("lock").status == 0)
        #expect(await mei("card", "export", "--remember", "0").status == 0)
        #expect(SessionKeyring.read(name: try Self.keptName(mei)) == nil)
        try "remember = \"13h\"\n".write(toFile: configHome + "/meishi/config", atomically: true, encoding: .utf8)
        let tooLong = await mei("card", "export")
        #expect(tooLong.status == 78)
        #expect(tooLong.err.contains("line 1: 'remember' must be a duration from 0 (off) to 12h, not '13h'"))
        #expect(await mei("card", "export", "--remember", "13h").status == 64)
    }

    /// Another user, in a session of their own, cannot read the key even knowing its serial.
    @Test func anotherUserCannotReadIt() async throws {
        guard Self.keyringAvailable else { print("skipped: no session keyring for this process"); return }
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") else {
            print("skipped: needs root, setpriv and /usr/bin/python3 to read as another user"); return
        }
        var mei = try await Self.mei()
        mei.environment["MEISHI_PASSPHRASE"] = Self.passphrase
        #expect(await mei("card", "export", "--remember", "1m").status == 0)
        defer { _ = SessionKeyring.removeAll() }
        let serial = try #require(SessionKeyring.serial(name: try Self.keptName(mei)))
        #expect(SessionKeyring.read(serial: serial) != nil)
        // nobody, in a new session keyring (as a login of theirs would be), asks the kernel for it.
        let script = """
            import ctypes, sys
            k = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
            k.keyctl_join_session_keyring(None)
            buf = ctypes.c_void_p()
            n = k.keyctl_read_alloc(int(sys.argv[1]), ctypes.byref(buf))
            print(n, ctypes.get_errno())
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, String(serial)]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(text == "-1 \(EACCES)\n", "nobody read the key: \(text)")
    }

    /// A session whose keyring cannot be used (`keyctl setperm @s 0`: not even its possessor may
    /// see it, as under a seccomp filter or a session without one) falls back to asking: the
    /// first unlock works and says once that nothing is remembered, the next command asks again.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/keyctl") && CardEditTerminalTests.python != nil,
                   "skipped: needs keyctl (keyutils) and python3 for a pseudo-terminal"))
    func withoutAUsableKeyringThePassphraseIsAskedEachTime() async throws {
        let mei = try await Self.mei()
        // Typed a second after the prompt: meishi turns echo off with TCSAFLUSH, which drops keys typed before.
        let steps: [[Any]] = [
            ["expect", "passphrase for"], ["sleep", 1], ["send", Self.passphrase + "\r"],
            ["expect", "the passphrase is not remembered: no session keyring (Permission denied); it will be asked again"],
            ["expect", "passphrase for"], ["sleep", 1], ["send", Self.passphrase + "\r"],
            ["expect", "exported twice"],
        ]
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/keyctl")
        p.arguments = [
            "session", "-", "/bin/sh", "-c", "keyctl setperm @s 0 && exec \"$@\"", "sh",
            CardEditTerminalTests.python!, Fixtures.root.appendingPathComponent("tools/pty-session.py").path,
            String(decoding: try JSONSerialization.data(withJSONObject: steps), as: UTF8.self),
            "/bin/sh", "-c", "\"$0\" card export --remember 10m >/dev/null && \"$0\" card export >/dev/null && echo exported twice", CLI.binary,
        ]
        var env = ProcessInfo.processInfo.environment
        env["MEISHI_HOME"] = mei.home
        env["MEISHI_PASSPHRASE"] = nil
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let data = try await offPool { out.fileHandleForReading.readDataToEndOfFile() }
        p.waitUntilExit()
        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
        let output = doc["output"] as? String ?? ""
        #expect(doc["failedStep"] is NSNull && doc["status"] as? Int == 0, "\(output)")
        #expect(output.components(separatedBy: "passphrase for").count == 3, "asked twice: \(output)")
    }
}

/// Guarded bytes of a string, to compare with what the keyring holds.
enum SecureBytesFixture {
    static func of(_ text: String) -> MeishiCrypto.SecureBytes { .init(copying: Array(text.utf8)) }
}
