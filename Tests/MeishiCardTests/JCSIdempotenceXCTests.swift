import XCTest
@testable import MeishiCard

/// XCTest half of the suite (the rest is Swift Testing): canonicalisation is a fixed point.
final class JCSIdempotenceXCTests: XCTestCase {
    func testCanonicalFormIsAFixedPoint() throws {
        for vector in try FileManager.default.contentsOfDirectory(atPath: Fixtures.url("vectors").path) where vector.hasSuffix(".txt") {
            let text = try String(contentsOf: Fixtures.url("vectors/" + vector), encoding: .utf8)
            let body = text.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("#") }.joined(separator: "\n")
            guard let value = try? StrictJSONParser.parse(Array(body.utf8)) else { continue }
            let once = JCS.canonicalize(value)
            XCTAssertEqual(JCS.canonicalize(try StrictJSONParser.parse(once)), once, vector)
        }
    }

    func testBase45RoundTripsEveryLength() {
        for n in 0..<64 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }
            let text = Base45.encode(bytes)
            XCTAssertEqual(Base45.decode(text), bytes)
            XCTAssertNotEqual(text.last, " ", "Base45 output never ends in a space")
        }
    }
}
