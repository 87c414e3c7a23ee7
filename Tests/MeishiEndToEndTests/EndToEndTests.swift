import Foundation
import Testing
@testable import MeishiCard
import MeishiCrypto
import MeishiKit

/// The built binary, run as a person would, each test in its own temporary home.
@Suite struct IdentityCommandTests {
    @Test func initIdAndRefusalToOverwrite() throws {
        let cli = CLI()
        let created = try cli("init", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        let did = try #require(created.json["did"] as? String)
        #expect(did.hasPrefix("did:key:z6Mk"))
        let id = try cli("id", "--json")
        #expect(id.json["did"] as? String == did)
        #expect(id.json["keyFile"] as? String == cli.home + "/identity.key")
        #expect((id.json["fingerprint"] as? String)?.split(separator: " ").count == 6)

        let again = try cli("init")
        #expect(again.status == 1)
        #expect(again.stderr.hasPrefix("meishi: error: an identity already exists"))
        #expect(again.stderr.contains("meishi: hint: use 'meishi init --force'"))
        #expect(try cli("id", "--json").json["did"] as? String == did)

        let forced = try cli("init", "--force", "--json")
        #expect(forced.status == 0)
        #expect(forced.json["did"] as? String != did)
        #expect(FileManager.default.fileExists(atPath: try #require(forced.json["backup"] as? String)))
    }

    @Test func missingIdentityIsExit66WithHint() throws {
        let r = try CLI()("id")
        #expect(r.status == 66)
        #expect(r.stderr.contains("meishi: hint: run 'meishi init' to create one there"))
    }

    @Test func keyReadableByOthersIsRefused() throws {
        let cli = try CLI.withCard()
        chmod(cli.home + "/identity.key", 0o640)
        let r = try cli("card", "export")
        #expect(r.status == 77)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("meishi: hint: chmod 600 \(cli.home)/identity.key"))
    }

    @Test func passphraseProtectedKey() throws {
        var cli = CLI()
        cli.environment["MEISHI_PASSPHRASE"] = "a long passphrase"
        #expect(try cli("init", "--passphrase").status == 0)
        #expect(try cli("card", "set", "name", "Mei").status == 0)
        #expect(try cli("id", "--json").json["encrypted"] as? Bool == true)
        let ok = try cli("card", "export")
        #expect(ok.status == 0, "\(ok.stderr)")
        let wrong = try cli.run(["card", "export"], extraEnvironment: ["MEISHI_PASSPHRASE": "not it"])
        #expect(wrong.status == 77)
        #expect(wrong.stderr.hasPrefix("meishi: error: wrong passphrase"))
        var without = cli
        without.environment["MEISHI_PASSPHRASE"] = nil
        let none = try without("card", "export")
        #expect(none.status == 77)
        #expect(none.stderr.contains("MEISHI_PASSPHRASE"))
    }
}

@Suite struct CardCommandTests {
    @Test func editAndShow() throws {
        let cli = try CLI.withCard()
        let shown = try cli("card", "show", "--json")
        let fields = try #require(shown.json["fields"] as? [String: [[String: Any]]])
        #expect(fields["phone"]?.first?["e164"] as? String == "+819012345678")
        #expect(fields["email"]?.first?["level"] as? String == "professional")
        let pub = try cli("card", "show", "--level", "public")
        #expect(pub.stdout.contains("Mei Tanaka") && !pub.stdout.contains("mei.tanaka@example.org"))
        #expect(try cli("card", "unset", "phone").status == 0)
        #expect(try cli("card", "show").stdout.contains("+81") == false)
    }

    @Test func badValuesKeepTheCardUnchanged() throws {
        let cli = try CLI.withCard()
        let before = FileManager.default.contents(atPath: cli.home + "/card.json")
        let cases: [([String], Int32)] = [
            (["card", "add", "email", "not-an-email"], 65),
            (["card", "set", "name", String(repeating: "x", count: 300)], 65),
            (["card", "set", "name", "Mei\u{1B}[31m"], 65),
            (["card", "set", "nickname", "M"], 64),
            (["card", "add", "name", "Other"], 64),
            (["card", "add", "url", "example.org"], 65),
            (["card", "set", "name", "Mei", "--level", "secret"], 64),
            (["card", "unset", "note"], 1),
            (["card", "export", "--fields", "name,nick"], 64),
        ]
        for (args, status) in cases {
            let r = try cli.run(args)
            #expect(r.status == status, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("meishi: error: "), "\(args)")
            #expect(r.stderr.split(separator: "\n").first!.count < 200)
        }
        #expect(FileManager.default.contents(atPath: cli.home + "/card.json") == before)
    }
}

@Suite struct VerifyAndContactsTests {
    @Test func exportVerifyAndStore() throws {
        let mei = try CLI.withCard()
        let payload = try mei.export("--level", "professional")
        let file = try mei.file("mei.json", payload)
        let v = try mei("verify", file)
        #expect(v.status == 0)
        #expect(v.stdout.hasPrefix("valid card from Mei Tanaka"))
        let vj = try mei("verify", "--json", "-", stdin: payload)
        #expect(vj.json["verdict"] as? String == "valid")
        #expect((vj.json["payload"] as? [String: Any])?["senderDID"] as? String != nil)

        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let added = try ken("contacts", "add", file, "--json")
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.json["result"] as? String == "added")
        let again = try ken("contacts", "add", "-", stdin: payload)
        #expect(again.status == 0)
        #expect(again.stdout.hasPrefix("unchanged"))
        let list = try ken("contacts", "list", "--json")
        let contacts = try #require(list.json["contacts"] as? [[String: Any]])
        #expect(contacts.count == 1)
        #expect(contacts[0]["trust"] as? String == "signed")
        #expect(contacts[0]["name"] as? String == "Mei Tanaka")
        #expect(try ken("contacts", "show", "mei").stdout.contains("mei.tanaka@example.org"))
        #expect(try ken("contacts", "list", "--trust", "met").stderr.contains("no contacts match"))
        let own = try ken("contacts", "add", "-", stdin: try ken.export())
        #expect(own.status == 65)
        #expect(try ken("contacts", "delete", "Mei Tanaka").status == 0)
        #expect(try ken("contacts", "show", "Mei Tanaka").status == 66)
    }

    @Test func badInputLeavesTheStoreUnchanged() throws {
        let mei = try CLI.withCard()
        let payload = try mei.export()
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        #expect(try ken("contacts", "add", "-", stdin: payload).status == 0)
        let before = try ken("contacts", "list", "--json").stdout

        var tampered = payload
        let range = try #require(tampered.range(of: Data("Mei Tanaka".utf8)))
        tampered.replaceSubrange(range, with: Data("Mei Tanako".utf8))
        let cases: [(Data?, [String], Int32, String)] = [
            (tampered, ["-"], 65, "bad signature"),
            (Data("{not json".utf8), ["-"], 65, "malformed payload"),
            (Data(repeating: 0x20, count: 20_000), ["-"], 65, "standard input is larger than 16 KiB"),
            (nil, ["/nonexistent/card.json"], 66, "cannot read"),
            (Data(), ["-"], 65, "malformed payload"),
        ]
        for (input, args, status, message) in cases {
            for command in [["verify"], ["contacts", "add"]] {
                let r = try ken.run(command + args, stdin: input)
                #expect(r.status == status, "\(command) \(message): \(r.stderr)")
                #expect(r.stderr.hasPrefix("meishi: error: ") && r.stderr.contains(message), "\(r.stderr)")
            }
        }
        let vj = try ken("verify", "--json", "-", stdin: tampered)
        #expect(vj.json["verdict"] as? String == "bad-signature")
        #expect(vj.status == 65)
        #expect(try ken("contacts", "list", "--json").stdout == before)
    }

    @Test func fixtureVectorsThroughTheCLI() throws {
        // The CLI has no clock override, so only verdicts that do not depend on "now" are checked here.
        let cli = CLI()
        let dir = Fixtures.url("vectors")
        for file in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where file.hasSuffix(".txt") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            let verdict = text.split(separator: "\n")[0].replacingOccurrences(of: "# verdict: ", with: "")
            let body = text.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("#") }.joined(separator: "\n")
            let r = try cli.run(["verify", "--json", "--max-skew", "1d", "-"], stdin: Data(body.utf8))
            let expected = verdict == "from-the-future" ? "valid" : verdict
            #expect(r.json["verdict"] as? String == expected, "\(file)")
            #expect(r.status == (expected == "valid" ? 0 : 65), "\(file)")
        }
    }

    @Test func peerTextIsSanitised() throws {
        let evil = Identity(signingKey: Ed25519.SigningKey(), boxKey: X25519.SecretKey())
        var p = try ProximityPayload.sign(disclosed: [.name: ["Eve"]], level: .public, signingKey: evil.signingKey,
                                          boxKey: evil.boxKey.publicKey, timestamp: Int64(Date().timeIntervalSince1970)).payload
        p.cardFields = [.name: .single("Eve\u{1B}[2J\u{1B}]0;pwned\u{7}\u{202E}gnp.exe"), .org: .single("Org\r\nFake: line")]
        p = p.signed(with: evil.signingKey).payload
        let cli = try CLI.withCard()
        for args in [["verify", "-"], ["contacts", "add", "-"], ["contacts", "list"], ["contacts", "show", "1"]] {
            let r = try cli.run(args, stdin: Data(p.canonicalJSON))
            #expect(r.status == 0, "\(args): \(r.stderr)")
            let raw = r.stdout + r.stderr
            #expect(!raw.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E || $0.value == 0x0D },
                    "\(args) printed a raw control character")
            #expect(r.stdout.contains("\\u{1B}"), "\(args)")
        }
    }

    @Test func impersonationIsFlagged() throws {
        let real = try CLI.withCard(name: "Mei Tanaka", email: "mei@example.org")
        let fake = try CLI.withCard(name: "Mei Tanaka", email: "mei.fake@example.org")
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        #expect(try ken("contacts", "add", "-", stdin: try real.export()).status == 0)
        let r = try ken("contacts", "add", "-", stdin: try fake.export())
        #expect(r.status == 0)
        #expect(r.stderr.contains("meishi: warning:") && r.stderr.contains("possible impersonation"))
        let list = try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(list?.count == 2)
        #expect(try ken("contacts", "show", "Mei Tanaka").status == 64)
    }

    static var pythonVerifier: String? { CLI.venvPython(importing: "rfc8785, cryptography") }

    @Test(.enabled(if: pythonVerifier != nil,
                   "skipped: .venv with rfc8785 and cryptography is missing (make test sets it up via scripts/python-tools.sh)"))
    func independentImplementationAgrees() throws {
        let mei = try CLI.withCard()
        try #require(try mei("card", "set", "note", "quote \" backslash \\ 日本語 😀", "--level", "public").status == 0)
        let payload = try mei.export("--level", "personal")
        var tampered = payload
        tampered.replaceSubrange(tampered.range(of: Data("Mei".utf8))!, with: Data("Mai".utf8))
        for (data, expected) in [(payload, "valid"), (tampered, "invalid: bad signature")] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: Self.pythonVerifier!)
            p.arguments = [Fixtures.root.appendingPathComponent("tools/verify-payload.py").path, try mei.file("p.json", data)]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            p.waitUntilExit()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == expected)
        }
    }
}

@Suite struct UsageTests {
    @Test func usageErrorsAndVersion() throws {
        let cli = CLI()
        let bogus = try cli("frobnicate")
        #expect(bogus.status == 64)
        #expect(bogus.stderr.hasPrefix("meishi: error: "))
        #expect(try cli("verify").status == 64)
        #expect(try cli("contacts", "list", "--limit", "0").status == 64)
        #expect(try cli("verify", "--max-skew", "soon", "x").status == 64)
        let version = try cli("--version")
        #expect(version.status == 0 && version.stdout.hasPrefix("0."))
        #expect(try cli("--help").stdout.contains("contacts"))
    }
}
