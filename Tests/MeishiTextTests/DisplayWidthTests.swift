import Foundation
import Testing
import MeishiText

/// The East Asian Width table against Python's unicodedata, which it is generated from.
@Suite struct DisplayWidthTests {
    static func python(_ args: String...) throws -> (status: Int32, out: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Fixtures.root.appendingPathComponent("tools/gen-east-asian-width.py").path] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    @Test func wideRangesMatchPythonsUnicodedata() throws {
        // The committed table is what the generator writes from this Python's data.
        #expect(try Self.python("--check").status == 0, "run python3 tools/gen-east-asian-width.py")
        let (status, text) = try Self.python("--ranges")
        try #require(status == 0)
        let exact = text.split(separator: "\n").map { line -> ClosedRange<UInt32> in
            let parts = line.split(separator: " ").map { UInt32($0, radix: 16)! }
            return parts[0]...parts[1]
        }
        #expect(exact.count > 100)
        // Every code point Python calls W or F is two columns here …
        let missed = exact.flatMap { $0.filter { !DisplayWidth.isWide($0) } }
        #expect(missed.isEmpty, "not wide here: \(missed.prefix(10).map { String($0, radix: 16) })")
        // … and no assigned code point Python calls narrow falls inside the table's ranges.
        let bridged = try Self.python("--bridged")
        #expect(bridged.status == 0 && bridged.out.isEmpty, "narrow but in the table: \(bridged.out.prefix(200))")
        for s in ["a", "é", "Ω", "…", "→"] { #expect(DisplayWidth.of(s) == 1, "\(s)") }
        for s in ["山", "あ", "한", "Ｍ", "😀"] { #expect(DisplayWidth.of(s) == 2, "\(s)") }
    }
}
