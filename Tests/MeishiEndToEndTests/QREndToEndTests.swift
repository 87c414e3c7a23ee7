import Foundation
import Testing
import MeishiCard
import MeishiQR

/// `card qr` and `scan` through the built binary.
@Suite struct QRCommandTests {
    static func typicalCLI() throws -> CLI {
        let cli = try CLI.withCard()
        try #require(try cli("card", "set", "title", "Staff Engineer").status == 0)
        try #require(try cli("card", "add", "url", "https://example.org/mei").status == 0)
        return cli
    }

    @Test func terminalQRFitsAndScansBack() throws {
        let mei = try Self.typicalCLI()
        let r = try mei("card", "qr", "--format", "terminal")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        let stripped = lines.map { $0.replacingOccurrences(of: "\u{1B}[38;5;16;48;5;231m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "") }
        #expect(stripped.allSatisfy { $0.count <= 77 })
        // The terminal rendering, turned back into an image, decodes to the same text as --format text.
        let text = try mei("card", "qr", "--format", "text").stdout.trimmingCharacters(in: .newlines)
        let image = Self.image(fromTerminal: stripped)
        #expect(QRScanner.scan(image).first.map { String(decoding: $0.bytes, as: UTF8.self) }?.hasPrefix("MEISHI1:") == true)
        #expect(text.hasPrefix("MEISHI1:"))
    }

    /// Each character cell is 2x2 pixels per module row pair: top half and bottom half.
    static func image(fromTerminal lines: [String], scale: Int = 4) -> GrayImage {
        let width = lines.map(\.count).max()!
        let height = lines.count * 2
        var pixels = [UInt8](repeating: 255, count: width * scale * height * scale)
        for (row, line) in lines.enumerated() {
            for (col, ch) in line.enumerated() {
                let top = ch == "█" || ch == "▀", bottom = ch == "█" || ch == "▄"
                for (half, dark) in [(0, top), (1, bottom)] where dark {
                    for dy in 0..<scale { for dx in 0..<scale {
                        pixels[((row * 2 + half) * scale + dy) * width * scale + col * scale + dx] = 0
                    } }
                }
            }
        }
        return GrayImage(width: width * scale, height: height * scale, pixels: pixels)
    }

    @Test func pngSvgScanStoreAndDryRun() throws {
        let mei = try Self.typicalCLI()
        let png = (mei.home as NSString).deletingLastPathComponent + "/mei.png"
        #expect(try mei("card", "qr", "-o", png).status == 0)
        #expect(FileManager.default.contents(atPath: png)?.starts(with: [0x89, 0x50, 0x4E, 0x47]) == true)
        let svg = (mei.home as NSString).deletingLastPathComponent + "/mei.svg"
        #expect(try mei("card", "qr", "-o", svg).status == 0)
        #expect(try String(contentsOfFile: svg, encoding: .utf8).contains("<svg"))

        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let dry = try ken("scan", "--dry-run", png)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("valid card from Mei Tanaka"))
        #expect(try ken("contacts", "list", "--json").json["contacts"] as? [Any] == nil
                || (try ken("contacts", "list", "--json").json["contacts"] as? [Any])?.isEmpty == true)
        let stored = try ken("scan", "--json", png)
        #expect(stored.status == 0, "\(stored.stderr)")
        let code = ((stored.json["files"] as? [[String: Any]])?.first?["codes"] as? [[String: Any]])?.first
        #expect(code?["kind"] as? String == "meishi-card")
        #expect(code?["verdict"] as? String == "valid")
        #expect((code?["points"] as? [Any])?.count == 4)
        let list = try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(list?.first?["trust"] as? String == "signed")
        #expect(list?.first?["source"] as? String == "qr")

        let raw = try ken("scan", "--raw", "-", stdin: FileManager.default.contents(atPath: png))
        #expect(raw.stdout == (try mei("card", "qr", "--format", "text").stdout.components(separatedBy: "\n").first! + "\n")
                || raw.stdout.hasPrefix("MEISHI1:"))
    }

    @Test func vcardQRImportsUnsigned() throws {
        let mei = try Self.typicalCLI()
        let png = (mei.home as NSString).deletingLastPathComponent + "/v.png"
        #expect(try mei("card", "qr", "--vcard", "-o", png).status == 0)
        let ken = try CLI.initialised()
        let shown = try ken("scan", png)
        #expect(shown.status == 0)
        #expect(shown.stdout.contains("vCard 4.0 (unsigned) for Mei Tanaka"))
        #expect(shown.stderr.contains("--import"))
        #expect(try ken("scan", "--import", png).status == 0)
        let list = try ken("contacts", "list", "--json").json["contacts"] as? [[String: Any]]
        #expect(list?.first?["trust"] as? String == "unsigned")
        #expect((list?.first?["did"] as? String)?.hasPrefix("unsigned:did:key:z6Mk") == true)
    }

    @Test func badImagesAndTamperedCards() throws {
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        let dir = (ken.home as NSString).deletingLastPathComponent
        let before = try ken("contacts", "list", "--json").stdout
        func png(_ text: String, _ name: String) throws -> String {
            let m = try QREncoder.encode(text, mode: .utf8, correction: .M)
            let path = dir + "/" + name
            try Data(try QRRender.png(m, scale: 4)).write(to: URL(fileURLWithPath: path))
            return path
        }
        let vectors = Fixtures.url("vectors")
        let tampered = try String(contentsOf: vectors.appendingPathComponent("21-bad-signature-qr-text.txt"), encoding: .utf8)
            .split(separator: "\n").last { !$0.hasPrefix("#") }.map(String.init)!
        let blank = dir + "/blank.pgm"
        try Data(Array("P5 64 64 255\n".utf8) + [UInt8](repeating: 200, count: 64 * 64)).write(to: URL(fileURLWithPath: blank))
        let textFile = dir + "/notes.txt"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: textFile))
        let goodPNG = try png("hello", "hello.png")
        let truncated = dir + "/truncated.png"
        try Data(FileManager.default.contents(atPath: goodPNG)!.prefix(80)).write(to: URL(fileURLWithPath: truncated))
        let badJPEG = dir + "/bad.jpg"
        try Data([0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x42, count: 500)).write(to: URL(fileURLWithPath: badJPEG))
        let cases: [(String, Int32, String)] = [
            (try png(tampered, "tampered.png"), 65, "bad signature"),
            (blank, 65, "no QR code found"),
            (textFile, 65, "not an image"),
            (truncated, 65, "corrupt or truncated image"),
            (badJPEG, 65, "corrupt or truncated image"),
            (dir + "/missing.png", 66, "cannot read"),
            (goodPNG, 65, "not a meishi card"),
        ]
        for (path, status, message) in cases {
            let r = try ken("scan", path)
            #expect(r.status == status, "\(path): \(r.stderr)")
            #expect(r.stderr.hasPrefix("meishi: error: ") && r.stderr.contains(message), "\(path): \(r.stderr)")
        }
        #expect(try ken("scan", "--raw", goodPNG).stdout == "hello\n")
        #expect(try ken("scan", "--raw", blank).status == 65)
        #expect(try ken("contacts", "list", "--json").stdout == before)
    }

    @Test func refusesPNGOnATerminalOnlyWithoutOutput() throws {
        let mei = try Self.typicalCLI()
        // Not a terminal here: PNG bytes to a pipe are fine.
        let r = try mei("card", "qr", "--format", "png")
        #expect(r.status == 0 && r.stdout.utf8.count > 100)
    }
}
