import Foundation
import Testing
import MeishiQR

/// Every QR meishi prints decodes to the same text with zxing-cpp, OpenCV and zbarimg, and every
/// --vcard QR parses with Python vobject (tools/interop.py). Runs when `make test` has set up
/// .venv and installed zbarimg and rsvg-convert.
@Suite struct InteropTests {
    static var python: String { Fixtures.root.appendingPathComponent(".venv/bin/python").path }

    static var toolsPresent: Bool {
        CLI.venvPython(importing: "zxingcpp, cv2, vobject, PIL") != nil && which("zbarimg") != nil && which("rsvg-convert") != nil
    }

    static func which(_ tool: String) -> String? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let p = "\(dir)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: p) { return p }
        }
        return nil
    }

    /// Runs a tool and returns its status and output: standard output and error together, or
    /// standard output alone without `standardError` (zbarimg may chatter about D-Bus on stderr).
    static func run(_ tool: String, _ args: [String], standardError: Bool = true) throws -> (Int32, String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = standardError ? out : FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    @Test(.enabled(if: toolsPresent, "skipped: needs .venv with zxing-cpp, opencv, pillow, vobject, plus zbarimg and rsvg-convert (make test installs them)"))
    func everyRenderingDecodesEverywhere() throws {
        let mei = try QRCommandTests.typicalCLI()
        try #require(try mei("card", "set", "note", "日本語 ünïcödé", "--level", "professional").status == 0)
        let dir = (mei.home as NSString).deletingLastPathComponent
        // Each `card qr` signs afresh (new shareId and time), so every image is checked against the
        // text meishi itself reads from it, and that text must be a valid card or a vCard.
        for (flags, name) in [([String](), "card"), (["--vcard"], "vcard")] {
            #expect(try mei.run(["card", "qr", "-o", "\(dir)/\(name).png"] + flags).status == 0)
            #expect(try mei.run(["card", "qr", "-o", "\(dir)/\(name).svg", "--scale", "8"] + flags).status == 0)
            let (rc, out) = try Self.run(Self.which("rsvg-convert")!, ["-o", "\(dir)/\(name)-svg.png", "\(dir)/\(name).svg"])
            #expect(rc == 0, "\(out)")
            let terminal = try mei.run(["card", "qr", "--format", "terminal"] + flags).stdout
            let lines = terminal.split(separator: "\n").map {
                $0.replacingOccurrences(of: "\u{1B}[38;5;16;48;5;231m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
            }
            let image = QRCommandTests.image(fromTerminal: lines, scale: 8)
            try Data(try pgm(image)).write(to: URL(fileURLWithPath: "\(dir)/\(name)-terminal.pgm"))
            var pairs: [String] = []
            for image in ["\(name).png", "\(name)-svg.png", "\(name)-terminal.pgm"] {
                let raw = try mei("scan", "--raw", "\(dir)/\(image)")
                #expect(raw.status == 0, "\(image): \(raw.stderr)")
                let expected = "\(dir)/\(image).expected"
                try Data(raw.stdout.utf8).write(to: URL(fileURLWithPath: expected))
                if name == "card" {
                    #expect(try mei("verify", "-", stdin: Data(raw.stdout.utf8)).status == 0, "\(image)")
                } else {
                    #expect(raw.stdout.hasPrefix("BEGIN:VCARD\r\nVERSION:4.0\r\n"))
                    try Data(raw.stdout.utf8).write(to: URL(fileURLWithPath: "\(dir)/vcard.txt"))
                }
                pairs += [expected, "\(dir)/\(image)"]
            }
            var (status, report) = try Self.run(Self.python, [Fixtures.root.appendingPathComponent("tools/interop.py").path] + pairs)
            if status != 0 {
                // Seen once in many full-suite runs and never alone (the same files then decode):
                // the decoders, not meishi's images. One retry on the same files, with the first
                // report kept in the log; a real disagreement fails both times.
                print("interop check failed once, retrying on the same files:\n\(report)")
                (status, report) = try Self.run(Self.python, [Fixtures.root.appendingPathComponent("tools/interop.py").path] + pairs)
            }
            #expect(status == 0, "\(report)")
        }
        let (status, report) = try Self.run(Self.python, [Fixtures.root.appendingPathComponent("tools/interop.py").path, "--vcard", "\(dir)/vcard.txt"])
        #expect(status == 0, "\(report)")
    }

    func pgm(_ g: GrayImage) throws -> [UInt8] {
        Array("P5\n\(g.width) \(g.height)\n255\n".utf8) + g.pixels
    }
}
