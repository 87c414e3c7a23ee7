import Foundation
import Testing
import MeishiCard
import MeishiText
import MeishiQR

/// Solidarity cards through real QR images and the built binary, both directions.
@Suite struct SolidarityEndToEndTests {
    /// `meishi verify` reads the Solidarity app's signed card too: every vector in
    /// fixtures/solidarity gets the verdict its header names, and exit 0 only when valid.
    @Test func verifyReadsTheSolidarityVectors() async throws {
        var p = InProcess()
        p.now = Date(timeIntervalSince1970: 1_767_312_000)
        for v in try SolidarityFixtureFiles.vectors() {
            p.stdin = Array(v.text.utf8)
            let r = await p("verify", "--json", "-")
            let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any]
            #expect(doc?["verdict"] as? String == v.verdict, "\(v.name): \(r.out) \(r.err)")
            #expect((r.status == 0) == (v.verdict == "valid") && (r.status == 0 || r.status == 65), "\(v.name): \(r.status)")
        }
        p.stdin = Array(try SolidarityFixtureFiles.vectors().first { $0.name == "04-valid-hostile-text" }!.text.utf8)
        let hostile = await p("verify", "-")
        #expect(hostile.out.hasPrefix("valid Solidarity card from Aiko\\u{1B}[31m \\u{202E}evil"), "\(hostile.out)")
    }

    static var qrencode: String? { InteropTests.which("qrencode") }

    /// The vectors in fixtures/solidarity, each as a PNG drawn by qrencode (ECC L, as Solidarity).
    static func pngs(in dir: String) throws -> [(name: String, verdict: String, png: String)] {
        try SolidarityFixtureFiles.vectors().map { v in
            let text = dir + "/" + v.name + ".in"
            try Data(v.text.utf8).write(to: URL(fileURLWithPath: text))
            let png = dir + "/" + v.name + ".png"
            let (rc, out) = try InteropTests.run(qrencode!, ["-l", "L", "-s", "4", "-r", text, "-o", png])
            try #require(rc == 0, "qrencode: \(out)")
            return (v.name, v.verdict, png)
        }
    }

    @Test(.enabled(if: qrencode != nil, "skipped: needs qrencode (make test installs it)"))
    func everyVectorThroughARealQR() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let dir = (ken.home as NSString).deletingLastPathComponent
        let images = try Self.pngs(in: dir)
        #expect(images.count >= 20)
        for image in images {
            let r = try ken("scan", "--dry-run", "--json", image.png)
            let code = ((r.json["files"] as? [[String: Any]])?.first?["codes"] as? [[String: Any]])?.first
            #expect(code?["kind"] as? String == "solidarity-card", "\(image.name): \(r.stdout)")
            #expect(code?["verdict"] as? String == image.verdict, "\(image.name): \(r.stderr)")
            #expect(r.status == (image.verdict == "valid" ? 0 : 65), "\(image.name)")
            if image.verdict != "valid" {
                #expect(r.stderr.hasPrefix("meishi: error: \(image.png): "), "\(image.name): \(r.stderr)")
                #expect(!r.stderr.replacingOccurrences(of: "\n", with: "").unicodeScalars.contains(where: TerminalText.isUnsafe),
                        "\(image.name)")
            }
        }
        // Nothing was stored by --dry-run, and a failed card stores nothing without it either.
        let invalid = try #require(images.first { $0.verdict == "bad-signature" })
        #expect(try ken("scan", invalid.png).status == 65)
        #expect((try ken("contacts", "list", "--json").json["contacts"] as? [Any])?.isEmpty == true)

        // A valid card is stored as signed, source solidarity, under its P-256 DID, with its age.
        let valid = try #require(images.first { $0.name.hasPrefix("01-") })
        let stored = try ken("scan", valid.png)
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(stored.stdout.contains("valid Solidarity card from Aiko Watanabe"))
        #expect(stored.stdout.contains("issued       2026-01-01T00:00:00Z ("))
        #expect(stored.stdout.contains("added Aiko Watanabe as #1 (signed) did:key:zDn"))
        let list = try #require(try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]])
        #expect(list.count == 1)
        #expect(list.first?["trust"] as? String == "signed")
        #expect(list.first?["source"] as? String == "solidarity")
        #expect((list.first?["did"] as? String)?.hasPrefix("did:key:zDn") == true)
        let shown = try ken("contacts", "show", "Aiko", "--json").json
        #expect((shown["fields"] as? [String: [String]])?["org"] == ["Shibuya Solidarity Kitchen"])
        #expect(shown["cardTimestamp"] as? String == "2026-01-01T00:00:00Z")
        // The DER-signed copy is the same card (same iat): unchanged.
        let der = try #require(images.first { $0.name.hasPrefix("02-") })
        #expect(try ken("scan", der.png).stdout.contains("unchanged"))

        // Hostile text: stored as sent, shown escaped on every path.
        let hostile = try #require(images.first { $0.name.hasPrefix("04-") })
        let rin = try CLI.initialised()
        let h = try rin("scan", hostile.png)
        #expect(h.status == 0, "\(h.stderr)")
        for out in [h.stdout, h.stderr, try rin("contacts", "list").stdout, try rin("contacts", "show", "1").stdout] {
            #expect(!out.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" })
        }
        #expect(h.stdout.contains("Aiko\\u{1B}[31m \\u{202E}evil"))
        let raw = try #require(try rin("contacts", "show", "1", "--json").json["name"] as? String)
        #expect(raw.unicodeScalars.contains("\u{1B}") && raw.unicodeScalars.contains("\u{202E}"))
    }

    static var photoToolsPresent: Bool { qrencode != nil && CLI.venvPython(importing: "PIL, numpy") != nil }

    /// The issue's "done when": a photo of a Solidarity card QR (rotated, in perspective, blurred,
    /// unevenly lit, noisy JPEG; tools/photograph.py) stores a verified contact.
    @Test(.enabled(if: photoToolsPresent, "skipped: needs qrencode and .venv with pillow and numpy (make test installs them)"))
    func photoOfASolidarityCardStoresAVerifiedContact() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let dir = (ken.home as NSString).deletingLastPathComponent
        let valid = try #require(try Self.pngs(in: dir).first { $0.name.hasPrefix("01-") })
        let photo = dir + "/photo.jpg"
        let (rc, out) = try InteropTests.run(CLI.venvPython(importing: "PIL, numpy")!,
                                             [Fixtures.root.appendingPathComponent("tools/photograph.py").path, valid.png, photo])
        try #require(rc == 0, "\(out)")
        let r = try ken("scan", photo)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("added Aiko Watanabe as #1 (signed) did:key:zDn"))
        let list = try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(list?.first?["source"] as? String == "solidarity")
    }

    /// meishi → meishi: a --solidarity QR from one home is verified and stored by another; a
    /// changed Solidarity key for a stored person is flagged as a possible impersonation.
    @Test func meishiReadsItsOwnSolidarityCardAndFlagsAKeyChange() throws {
        let mei = try QRCommandTests.typicalCLI()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let png = dir + "/mei-solidarity.png"
        let made = try mei("card", "qr", "--solidarity", "-o", png)
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stderr.contains("Solidarity card at level professional: QR version"))
        #expect(made.stderr.contains("ECC L"))
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let r = try ken("scan", "--json", png)
        #expect(r.status == 0, "\(r.stderr)")
        let code = ((r.json["files"] as? [[String: Any]])?.first?["codes"] as? [[String: Any]])?.first
        #expect(code?["verdict"] as? String == "valid")
        let solidarity = code?["solidarity"] as? [String: Any]
        let meiDID = try #require(try mei("id", "--json").json["did"] as? String)
        #expect(solidarity?["linkedDIDs"] as? [String] == [meiDID])
        #expect((solidarity?["fields"] as? [String: [String]])?["title"] == ["Staff Engineer"])
        #expect((code?["contact"] as? [String: Any])?["source"] as? String == "solidarity")

        // Mei re-inits: a new identity, so a new Solidarity key, same name and email.
        #expect(try mei("init", "--force").status == 0)
        let png2 = dir + "/mei-solidarity-2.png"
        #expect(try mei("card", "qr", "--solidarity", "-o", png2).status == 0)
        let again = try ken("scan", png2)
        #expect(again.status == 0)
        #expect(again.stderr.contains("meishi: warning: Mei Tanaka uses the same name or email as contact #1"))
        #expect(again.stderr.contains("possible impersonation"))
        // Her own scan of her own card is refused.
        let own = try mei("scan", png2)
        #expect(own.status == 65 && own.stderr.contains("your own Solidarity card"))
    }

    @Test func solidarityFlagsAndPassphrase() throws {
        let mei = try QRCommandTests.typicalCLI()
        let both = try mei("card", "qr", "--solidarity", "--vcard")
        #expect(both.status == 64 && both.stderr.contains("--vcard and --solidarity"))
        let text = try mei("card", "qr", "--solidarity", "--format", "text", "--level", "public")
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("eyJ") && text.stdout.split(separator: ".").count == 3)
        // --fields limits what is signed.
        let only = try mei("card", "qr", "--solidarity", "--format", "text", "--fields", "name,org")
        let payload = try #require(Base64URL.decode(String(only.stdout.split(separator: ".")[1])))
        let claims = String(decoding: payload, as: UTF8.self)
        #expect(claims.contains("Example Robotics") && !claims.contains("mei.tanaka@example.org"))

        let locked = CLI()
        var env = ["MEISHI_PASSPHRASE": "a long passphrase"]
        #expect(try locked.run(["init", "--passphrase"], extraEnvironment: env).status == 0)
        #expect(try locked.run(["card", "set", "name", "Ken"], extraEnvironment: env).status == 0)
        env["MEISHI_PASSPHRASE"] = "not it"
        let wrong = try locked.run(["card", "qr", "--solidarity", "--format", "text"], extraEnvironment: env)
        #expect(wrong.status == 77 && wrong.stderr.hasPrefix("meishi: error: wrong passphrase"))
        #expect(!FileManager.default.fileExists(atPath: locked.home + "/solidarity.key"))
        env["MEISHI_PASSPHRASE"] = "a long passphrase"
        #expect(try locked.run(["card", "qr", "--solidarity", "--format", "text"], extraEnvironment: env).status == 0)
        let key = try String(contentsOfFile: locked.home + "/solidarity.key", encoding: .utf8)
        #expect(key.contains("argon2id-xchacha20poly1305"))
    }

    /// On a terminal the dense code is printed only when it fits (`script` gives the binary a
    /// pseudo-terminal of the size `stty` sets).
    @Test(.enabled(if: InteropTests.which("script") != nil, "skipped: needs script(1) from util-linux for a pseudo-terminal"))
    func terminalQROnlyWhenItFits() throws {
        let mei = try QRCommandTests.typicalCLI()
        func onTerminal(cols: Int, rows: Int) throws -> (Int32, String) {
            let command = "stty cols \(cols) rows \(rows); MEISHI_HOME='\(mei.home)' '\(CLI.binary)' card qr --solidarity"
            return try InteropTests.run(InteropTests.which("script")!, ["-qec", command, "/dev/null"])
        }
        let (small, refused) = try onTerminal(cols: 100, rows: 40)
        #expect(small == 64, "\(refused)")
        #expect(refused.contains("meishi: error: the QR (version "))
        #expect(refused.contains("this terminal has 100x40"))
        #expect(refused.contains("meishi: hint: enlarge the terminal") && refused.contains("write a picture: -o card.png"))
        let (large, printed) = try onTerminal(cols: 220, rows: 120)
        #expect(large == 0, "\(printed)")
        #expect(printed.contains("▀") && printed.contains("Solidarity card at level professional"))
    }

    /// The unsigned Solidarity kinds import like a vCard; the unreadable ones are named (exit 65).
    @Test func unsignedAndUnsupportedKinds() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let dir = (ken.home as NSString).deletingLastPathComponent
        func png(_ text: String, _ name: String) throws -> String {
            let m = try QREncoder.encode(text, mode: .utf8, correction: .L)
            let path = dir + "/" + name
            try Data(try QRRender.png(m, scale: 4)).write(to: URL(fileURLWithPath: path))
            return path
        }
        let envelope = try png(#"{"snapshot":{"cardId":"c1","company":"Kitchen","emails":["aiko@example.net"],"name":"Aiko","title":"Coordinator"},"version":2}"#,
                               "plain.png")
        let shown = try ken("scan", envelope)
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("Solidarity plaintext envelope (unsigned) for Aiko"))
        #expect(shown.stderr.contains("--import"))
        let imported = try ken("scan", "--import", "--json", envelope)
        #expect(imported.status == 0, "\(imported.stderr)")
        let code = ((imported.json["files"] as? [[String: Any]])?.first?["codes"] as? [[String: Any]])?.first
        #expect(code?["kind"] as? String == "solidarity-unsigned")
        let link = try png("solidarity://contact?name=Rin%20Sato&job=Nurse", "link.png")
        #expect(try ken("scan", "--import", link).status == 0)
        let contacts = try #require(try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]])
        #expect(contacts.count == 2)
        #expect(contacts.allSatisfy { $0["trust"] as? String == "unsigned" && ($0["did"] as? String)?.hasPrefix("unsigned:") == true })
        #expect(Set(contacts.compactMap { $0["source"] as? String }) == ["qr-solidarity"])

        let cases: [(String, String, String)] = [
            ("sqc1.s1.0.3.6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b.AAAA", "solidarity-chunk", "sqc1"),
            ("openid4vp://?client_id=x&request_uri=https%3A%2F%2Fexample.net%2Fr", "openid4vp", "OpenID"),
            (#"{"encryptedPayload":"q83vEjRWeJA","iv":"AAAA","version":2}"#, "solidarity-zkproof", "zkProof"),
        ]
        for (text, kind, words) in cases {
            let path = try png(text, kind + ".png")
            let r = try ken("scan", "--json", path)
            #expect(r.status == 65, "\(kind)")
            #expect(r.stderr.hasPrefix("meishi: error: \(path): ") && r.stderr.contains(words), "\(kind): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count <= 2)
            let code = ((r.json["files"] as? [[String: Any]])?.first?["codes"] as? [[String: Any]])?.first
            #expect(code?["kind"] as? String == kind)
            #expect(code?["verdict"] as? String == "unsupported")
        }
        #expect((try ken("contacts", "list", "--json").json["contacts"] as? [Any])?.count == 2)
    }

    /// A hostile member name reaches the error message (duplicate member) escaped, never raw.
    @Test func hostileTextInAnErrorIsEscaped() throws {
        let ken = try CLI.initialised()
        let dir = (ken.home as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let header = Base64URL.encode(Array(#"{"alg":"ES256","typ":"JWT"}"#.utf8))
        let payload = Base64URL.encode(Array(#"{"\u001b]0;owned\u0007":1,"\u001b]0;owned\u0007":2}"#.utf8))
        let text = header + "." + payload + "." + Base64URL.encode([UInt8](repeating: 7, count: 64))
        let path = dir + "/hostile.png"
        try Data(try QRRender.png(try QREncoder.encode(text, mode: .utf8, correction: .L), scale: 4)).write(to: URL(fileURLWithPath: path))
        let r = try ken("scan", path)
        #expect(r.status == 65)
        #expect(r.stderr.contains("duplicate member name"), "\(r.stderr)")
        #expect(!r.stderr.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{7}" })
        #expect(r.stderr.contains("\\u{1B}]0;owned\\u{7}"))
    }

    static var checkerPresent: Bool {
        CLI.venvPython(importing: "cryptography, base58") != nil && InteropTests.which("zbarimg") != nil
    }

    /// meishi → Solidarity: the QR `card qr --solidarity` draws, read back by zbarimg, passes an
    /// independent Python check of Solidarity's rules (tools/verify-solidarity.py).
    @Test(.enabled(if: checkerPresent, "skipped: needs .venv with cryptography and base58, and zbarimg (make test installs them)"))
    func independentCheckerAcceptsMeishisQR() throws {
        let mei = try QRCommandTests.typicalCLI()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let did = try #require(try mei("id", "--json").json["did"] as? String)
        let checker = Fixtures.root.appendingPathComponent("tools/verify-solidarity.py").path
        for (format, flags) in [("png", [String]()), ("svg", ["--scale", "6"])] {
            let image = "\(dir)/card.\(format)"
            #expect(try mei.run(["card", "qr", "--solidarity", "-o", image] + flags).status == 0)
            var png = image
            if format == "svg" {
                guard let rsvg = InteropTests.which("rsvg-convert") else { continue }
                png = "\(dir)/card-svg.png"
                #expect(try InteropTests.run(rsvg, ["-o", png, image]).0 == 0)
            }
            let (rc, text) = try InteropTests.run(InteropTests.which("zbarimg")!, ["--raw", "-q", "-Sbinary", png], standardError: false)
            #expect(rc == 0, "zbarimg: \(text)")
            let jws = text.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(jws.hasPrefix("eyJ"))
            try Data(jws.utf8).write(to: URL(fileURLWithPath: "\(dir)/card.jws"))
            let (status, report) = try InteropTests.run(CLI.venvPython(importing: "cryptography, base58")!,
                                                        [checker, "--same-as", did, "\(dir)/card.jws"])
            #expect(status == 0, "\(report)")
            #expect(report.contains("valid: Mei Tanaka"))
            // The checker is not a rubber stamp: one changed byte of the payload fails it.
            var parts = jws.split(separator: ".").map(String.init)
            var payload = Base64URL.decode(parts[1])!
            payload[payload.count / 2] ^= 0x01
            parts[1] = Base64URL.encode(payload)
            try Data(parts.joined(separator: ".").utf8).write(to: URL(fileURLWithPath: "\(dir)/tampered.jws"))
            let (bad, why) = try InteropTests.run(CLI.venvPython(importing: "cryptography, base58")!, [checker, "\(dir)/tampered.jws"])
            #expect(bad == 1, "\(why)")
        }
    }
}

/// Reads fixtures/solidarity for the end-to-end tests (the unit tests have their own runner).
enum SolidarityFixtureFiles {
    static func vectors() throws -> [(name: String, verdict: String, text: String)] {
        let dir = Fixtures.url("solidarity")
        return try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".txt") }.sorted().map { name in
            let lines = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8).split(separator: "\n")
            let verdict = lines.first { $0.hasPrefix("# verdict: ") }.map { String($0.dropFirst(11)) } ?? "?"
            return (String(name.dropLast(4)), verdict, lines.filter { !$0.hasPrefix("#") }.joined(separator: "\n"))
        }
    }
}
