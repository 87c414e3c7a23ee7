import Foundation
import Testing

/// `scan` reads WebP through libwebp (issue 27): lossless, lossy, and a dark code on a
/// transparent background, made by Pillow from the PNG `card qr` writes; a GIF is refused with
/// the formats it does read and a hint.
@Suite struct WebPScanTests {
    static let python = CLI.venvPython(importing: "PIL.features")

    @Test(.enabled(if: python != nil, "skipped: needs .venv with pillow (scripts/python-tools.sh)"))
    func scanReadsWebPAndNamesTheFormatsItReads() throws {
        let mei = try CLI.withCard()
        let dir = (mei.home as NSString).deletingLastPathComponent
        let png = dir + "/mei.png"
        #expect(try mei("card", "qr", "-o", png).status == 0)
        let script = """
            import sys
            from PIL import Image, features
            assert features.check("webp")
            src, out = sys.argv[1], sys.argv[2]
            im = Image.open(src).convert("L")
            im.save(out + "/lossless.webp", lossless=True)
            im.convert("RGB").save(out + "/lossy.webp", quality=60)
            alpha = Image.new("LA", im.size)
            alpha.putdata([(0, 255) if p < 128 else (0, 0) for p in im.getdata()])
            alpha.save(out + "/transparent.webp", lossless=True)
            im.save(out + "/card.gif")
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.python!)
        p.arguments = ["-c", script, png, dir]
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0)
        let ken = try CLI.withCard(name: "Ken Sato", email: "ken@example.org")
        for name in ["lossless", "lossy", "transparent"] {
            let path = dir + "/\(name).webp"
            #expect(FileManager.default.contents(atPath: path)?.starts(with: Array("RIFF".utf8)) == true)
            let r = try ken("scan", "--dry-run", path)
            #expect(r.status == 0 && r.stdout.contains("valid card from Mei Tanaka"), "\(name): \(r.stderr)")
        }
        let gif = try ken("scan", dir + "/card.gif")
        #expect(gif.status == 65)
        #expect(gif.stderr == "meishi: error: \(dir)/card.gif: not an image meishi can read: it reads PNG, JPEG, WebP, PGM and PPM\n"
                + "meishi: hint: save it as PNG or JPEG first (a screenshot of it works too)\n", "\(gif.stderr)")
        // Damaged WebP: said, not a crash.
        var bytes = try #require(FileManager.default.contents(atPath: dir + "/lossy.webp"))
        bytes = bytes.prefix(40)
        try bytes.write(to: URL(fileURLWithPath: dir + "/cut.webp"))
        let cut = try ken("scan", "--json", dir + "/cut.webp")
        #expect(cut.status == 65, "\(cut.stderr)")
    }
}
