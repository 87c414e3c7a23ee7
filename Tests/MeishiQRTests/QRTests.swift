import Foundation
import Testing
import MeishiCard
@testable import MeishiQR

@Suite struct EncodeAndScanTests {
    /// The typical card of fixtures/qr/typical-card.txt (issue: at ECC M, QR version 13 or lower).
    static func typicalText() throws -> String {
        let text = try String(contentsOf: Fixtures.url("qr/typical-card.txt"), encoding: .utf8)
        return text.split(separator: "\n").first { !$0.hasPrefix("#") }.map(String.init)!
    }

    @Test func typicalCardFitsVersion13AtM() throws {
        let text = try Self.typicalText()
        #expect(text.hasPrefix("MEISHI1:"))
        let m = try QREncoder.encode(text, mode: .alphanumeric, correction: .M)
        #expect(m.version <= 13, "version \(m.version) for \(text.count) characters")
        // A 2-module quiet zone on a terminal: at most 73x37 characters at version 13.
        #expect(QRRender.terminalColumns(m) == m.size + 4 && QRRender.terminalColumns(m) <= 73)
        let lines = QRRender.terminal(m).split(separator: "\n")
        #expect(lines.count == (m.size + 4 + 1) / 2)
    }

    @Test(arguments: QRErrorCorrection.allCases)
    func pngRoundTripThroughZbar(_ ecc: QRErrorCorrection) throws {
        let text = try Self.typicalText()
        let m = try QREncoder.encode(text, mode: .alphanumeric, correction: ecc)
        let png = try QRRender.png(m, scale: 3)
        let image = try ImageDecoder.decode(png)
        #expect(image.width == (m.size + 8) * 3)
        let found = QRScanner.scan(image)
        #expect(found.map { String(decoding: $0.bytes, as: UTF8.self) } == [text])
    }

    @Test func utf8WithECIRoundTrips() throws {
        let text = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:田中 芽衣 😀\r\nEND:VCARD\r\n"
        let m = try QREncoder.encode(text, mode: .utf8, correction: .M)
        let found = QRScanner.scan(QRRender.grayImage(m, scale: 4))
        #expect(found.first?.bytes == Array(text.utf8))
    }

    @Test func findsInvertedCodes() throws {
        let m = try QREncoder.encode("HELLO", mode: .alphanumeric, correction: .M)
        var img = QRRender.grayImage(m, scale: 4)
        img.pixels = img.pixels.map { 255 - $0 }
        #expect(QRScanner.scan(img).first?.bytes == Array("HELLO".utf8))
    }

    @Test func tooLargeContent() {
        let big = String(repeating: "A", count: 5000)
        #expect(throws: QRError.contentTooLarge(bytes: 5000)) { try QREncoder.encode(big, mode: .alphanumeric, correction: .H) }
    }

    @Test func svgHasQuietZoneAndOnePath() throws {
        let m = try QREncoder.encode("HELLO", mode: .alphanumeric, correction: .M)
        let svg = QRRender.svg(m, scale: 8)
        #expect(svg.contains("viewBox=\"0 0 \(m.size + 8) \(m.size + 8)\""))
        #expect(svg.components(separatedBy: "<path").count == 2)
    }
}

@Suite struct ImageDecoderTests {
    @Test func refusesNonImagesAndCorruptFiles() throws {
        #expect(throws: QRError.notAnImage) { try ImageDecoder.decode(Array("hello".utf8)) }
        let m = try QREncoder.encode("HELLO", mode: .alphanumeric, correction: .M)
        let png = try QRRender.png(m, scale: 2)
        #expect(throws: QRError.self) { try ImageDecoder.decode(Array(png.prefix(png.count / 2))) }
        var flipped = png
        flipped[flipped.count / 2] ^= 0xFF
        #expect(throws: QRError.self) { try ImageDecoder.decode(flipped) }
        #expect(throws: QRError.self) { try ImageDecoder.decode([0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 0x4A]) }
        // A truncated JPEG must be an error, never the end of the process (libjpeg's exit()).
        #expect(throws: QRError.self) { try ImageDecoder.decode([0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0x41, count: 100)) }
    }

    /// A JPEG twice the preferred side or more is decoded once, shrunk by libjpeg (DCT scaling)
    /// to a size chosen from its header: 3300 x 40 comes out at 1/2, 1650 x 20.
    @Test func largeJPEGIsDecodedShrunk() throws {
        let image = try ImageDecoder.decode(Array(Fixtures.data("qr/locator/wide.jpg")))
        #expect(image.width == 1650 && image.height == 20)
        // A gradient from dark on the left to light on the right survives the scaling.
        #expect(image.pixels[10 * 1650 + 20] < 60 && image.pixels[10 * 1650 + 1630] > 200)
    }

    @Test func pixelLimitIsCheckedFromTheHeader() throws {
        let m = try QREncoder.encode("HELLO", mode: .alphanumeric, correction: .M)
        let png = try QRRender.png(m, scale: 10)
        let side = (m.size + 8) * 10
        #expect(throws: QRError.tooManyPixels(width: side, height: side, limit: 1000)) {
            try ImageDecoder.decode(png, maximumPixels: 1000)
        }
        let pgm = Array("P5\n70000 70000\n255\n".utf8) + [0, 0, 0]
        #expect(throws: QRError.tooManyPixels(width: 70000, height: 70000, limit: ImageDecoder.maximumPixels)) {
            try ImageDecoder.decode(pgm)
        }
    }

    /// Found by fuzzing: a sample above maxval overflowed the 8-bit result and trapped `scan`.
    @Test func pnmSamplesAboveMaxvalAreClamped() throws {
        let image = try ImageDecoder.decode(Array("P5\n2 1\n4\n".utf8) + [200, 2])
        #expect(image.pixels == [255, 127])
    }

    @Test func readsPGMAndPPM() throws {
        let m = try QREncoder.encode("PNM", mode: .alphanumeric, correction: .M)
        let g = QRRender.grayImage(m, scale: 3)
        let pgm = Array("P5\n# comment\n\(g.width) \(g.height)\n255\n".utf8) + g.pixels
        #expect(try ImageDecoder.decode(pgm) == g)
        let ppm = Array("P6 \(g.width) \(g.height) 255\n".utf8) + g.pixels.flatMap { [$0, $0, $0] }
        #expect(QRScanner.scan(try ImageDecoder.decode(ppm)).first?.bytes == Array("PNM".utf8))
    }
}

@Suite struct CardQRTextTests {
    @Test func base45RFC9285Examples() {
        #expect(Base45.encode(Array("AB".utf8)) == "BB8")
        #expect(Base45.encode(Array("Hello!!".utf8)) == "%69 VD92EX0")
        #expect(Base45.encode(Array("base-45".utf8)) == "UJCLQE7W581")
        #expect(Base45.decode("QED8WEX0") == Array("ietf!".utf8))
        #expect(Base45.decode("GGW") == nil)  // 65535 < value: out of range
        #expect(Base45.decode("A") == nil)
        #expect(Base45.decode("a") == nil)
    }
}
