import Foundation
import Testing
@testable import MeishiQR

/// Issue 22, finding 7: a progressive JPEG that repeats a cheap scan costs a decoder a walk over
/// every block per scan (15,000 scans of 93 bytes over 7000x7000 pixels: 101 s). The files are
/// made by tools/progressive-jpeg-bomb.py, an external program as an attacker would use.
@Suite struct ProgressiveJPEGTests {
    /// The bomb of `width`x`height` pixels and `scans` scans, or nil (with the reason recorded)
    /// when python3 is missing.
    static func bomb(_ width: Int, _ height: Int, scans: Int) throws -> [UInt8] {
        let out = Fixtures.temporaryDirectory() + "/bomb.jpg"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = [Fixtures.root.appendingPathComponent("tools/progressive-jpeg-bomb.py").path, "\(width)", "\(height)", "\(scans)", out]
        try p.run()
        p.waitUntilExit()
        try #require(p.terminationStatus == 0)
        return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
    }

    static var canRun: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") }

    /// More than 100 scans is refused as too costly, during the 101st scan; it used to be decoded.
    @Test(.enabled(if: canRun, "skipped: needs /usr/bin/python3 to write the test JPEGs"))
    func aJPEGOfMoreThan100ScansIsRefused() throws {
        let bytes = try Self.bomb(2000, 2000, scans: 1000)
        #expect(throws: QRError.tooCostly("progressive JPEG with more than 100 scans")) { try ImageDecoder.decode(bytes) }
    }

    /// 100 scans (ten times a camera's progressive photo) still decode: flat grey, at the scale chosen.
    @Test(.enabled(if: canRun, "skipped: needs /usr/bin/python3 to write the test JPEGs"))
    func aJPEGOf100ScansDecodes() throws {
        let image = try ImageDecoder.decode(try Self.bomb(640, 480, scans: 100))
        #expect(image.width == 640 && image.height == 480)
        #expect(Set(image.pixels) == [128])
    }
}
