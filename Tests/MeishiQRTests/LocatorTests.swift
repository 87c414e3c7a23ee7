import Foundation
import Testing
@testable import MeishiQR

/// The finder-pattern locator: codes zbar's own finder gives up on (strong perspective, crowds)
/// are located, straightened and read; images without a code give nothing.
@Suite struct FinderLocatorTests {
    static func image(_ name: String) throws -> GrayImage { try ImageDecoder.decode(Array(Fixtures.data("qr/locator/" + name))) }
    static func text(_ name: String) throws -> String { try String(contentsOf: Fixtures.url("qr/locator/" + name), encoding: .utf8) }

    /// Codes read by the finder pass alone, in the order they are found.
    static func located(_ image: GrayImage) -> (codes: [String], unread: Int, seen: Int) {
        var codes: [String] = []
        let located = QRScanner.locate(("first", { (image, 1) }), deadline: CPUDeadline(after: .seconds(30))) { bytes, _, _ in
            codes.append(String(decoding: bytes, as: UTF8.self))
        }
        return (codes, located.unread, located.seen)
    }

    @Test func findsTheThreeFindersOfARenderedCode() throws {
        let m = try QREncoder.encode("HELLO LOCATOR", mode: .alphanumeric, correction: .M)
        let scale = 4.0
        let image = QRRender.grayImage(m, scale: Int(scale))
        let finders = FinderLocator.finders(in: ImageOps.binarise(image))
        #expect(finders.count == 3)
        let centre = { (modules: Double) in (modules + 4) * scale }
        for (x, y) in [(3.5, 3.5), (Double(m.size) - 3.5, 3.5), (3.5, Double(m.size) - 3.5)] {
            #expect(finders.contains { abs($0.x - centre(x)) < 1.5 && abs($0.y - centre(y)) < 1.5 && abs($0.module - scale) < 0.6 },
                    "no finder at \(x), \(y): \(finders)")
        }
        let triples = FinderLocator.triples(finders)
        #expect(triples.count == 1)
        #expect(triples.first?.dimension == m.size)
        #expect(triples.first.map { abs($0.topLeft.x - centre(3.5)) < 1.5 && abs($0.topRight.x - centre(Double(m.size) - 3.5)) < 1.5 } == true)
    }

    @Test func homographyMapsTheFourPointsAndComposes() throws {
        let from = [(0.0, 0.0), (10, 0), (0, 10), (10, 10)], to = [(5.0, 7.0), (50, 3), (2, 60), (70, 80)]
        let h = try #require(Homography(from: from, to: to))
        for (f, t) in zip(from, to) {
            let p = h.apply(f.0, f.1)
            #expect(abs(p.0 - t.0) < 1e-9 && abs(p.1 - t.1) < 1e-9)
        }
        let twice = h.after(Homography(m: [2, 0, 0, 0, 2, 0, 0, 0, 1])).apply(5, 5)
        #expect(abs(twice.0 - 70) < 1e-9 && abs(twice.1 - 80) < 1e-9)
        #expect(Homography(from: [(0, 0), (1, 1), (2, 2), (3, 3)], to: to) == nil)
    }

    /// Generated here: a code drawn through a strong perspective, the far side a half to a third
    /// of the near one, at several versions and turns.
    @Test(arguments: [(2, 0), (4, 1), (6, 2), (9, 3), (14, 0)])
    func readsGeneratedPerspective(version: Int, turn: Int) throws {
        let text = "PERSPECTIVE V\(version) " + String(repeating: "Z", count: version * 8)
        let m = try QREncoder.encode(text, mode: .alphanumeric, correction: .M)
        let side = 420.0
        var corners = [(0.08, 0.10), (0.93, 0.28), (0.90, 0.74), (0.06, 0.92)].map { ($0.0 * side, $0.1 * side) }
        corners = Array(corners[turn...] + corners[..<turn])
        let s = Double(m.size)
        let toModule = try #require(Homography(from: [corners[0], corners[1], corners[3], corners[2]], to: [(0, 0), (s, 0), (0, s), (s, s)]))
        var pixels = [UInt8](repeating: 230, count: Int(side * side))
        for y in 0..<Int(side) {
            for x in 0..<Int(side) {
                let (u, v) = toModule.apply(Double(x) + 0.5, Double(y) + 0.5)
                guard u >= 0, v >= 0, u < s, v < s else { continue }
                pixels[y * Int(side) + x] = m[Int(u), Int(v)] ? 20 : 245
            }
        }
        let image = GrayImage(width: Int(side), height: Int(side), pixels: pixels)
        #expect(Self.located(image).codes == [text])
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [text])
    }

    @Test(arguments: 1...4)
    func readsPerspectiveFixtures(_ n: Int) throws {
        let image = try Self.image("perspective-\(n).png")
        let expected = try Self.text("perspective-\(n).txt")
        #expect(Self.located(image).codes == [expected])
        let found = QRScanner.scan(image)
        #expect(found.map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
        // Corner points come back in the source image's coordinates.
        for p in found.first?.points ?? [] { #expect((0..<image.width).contains(p.x) && (0..<image.height).contains(p.y)) }
    }

    @Test func readsEveryCodeOfACrowdOnce() throws {
        let image = try Self.image("crowd.png")
        let expected = try Self.text("crowd.txt").split(separator: "\n").map(String.init)
        // The locator alone reads most of them (the smallest, about 2 pixels a module, are left
        // to the other passes), each once.
        let located = Self.located(image)
        #expect(located.codes.count >= 6)
        #expect(Set(located.codes).count == located.codes.count)
        #expect(Set(located.codes).isSubset(of: expected))
        // What is checked is that every code is found once, not how fast: a debug build on a
        // loaded machine gets more than the default 100 ms of processor time.
        let found = QRScanner.scan(image, budget: .seconds(5))
        let texts = found.map { String(decoding: $0.bytes, as: UTF8.self) }
        #expect(texts.count == expected.count)
        #expect(Set(texts) == Set(expected))
    }

    /// Codes zbar alone does not read, located here: dotted and bold modules in perspective,
    /// light modules on dark (the locator looks for both polarities), a strong shear (no fitted
    /// map alternates; the likeliest one and the parallelogram through the centres still go to zbar).
    @Test(arguments: ["dots", "bold", "inverted-perspective", "shear"])
    func readsStyledAndShearedFixtures(_ name: String) throws {
        let image = try Self.image(name + ".png")
        let expected = try Self.text(name + ".txt")
        #expect(ZBar.scan(image).isEmpty)
        #expect(Self.located(image).codes == [expected])
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
    }

    @Test func findsLightFindersOnlyInTheInvertedPicture() throws {
        let bin = ImageOps.binarise(try Self.image("inverted-perspective.png"))
        #expect(FinderLocator.triples(FinderLocator.finders(in: bin)).isEmpty)
        let inverted = GrayImage(width: bin.width, height: bin.height, pixels: bin.pixels.map { 255 - $0 })
        #expect(FinderLocator.triples(FinderLocator.finders(in: inverted)).count >= 1)
    }

    /// The redrawn grid of a rendered code, through the map from modules to its pixels, is the
    /// code itself, module for module.
    @Test(arguments: [4, 40, 120, 300])
    func gridRedrawsTheModules(length: Int) throws {
        let text = "GRID " + String(repeating: "G", count: length)
        let m = try QREncoder.encode(text, mode: .alphanumeric, correction: .M)
        let scale = 3.0
        let toPixels = Homography(m: [scale, 0, 4 * scale, 0, scale, 4 * scale, 0, 0, 1])
        let r = FinderLocator.grid(QRRender.grayImage(m, scale: Int(scale)), dimension: m.size, toSource: toPixels)
        let p = Int(FinderLocator.modulePixels)
        for y in 0..<m.size {
            for x in 0..<m.size {
                #expect((r.image.pixels[((y + 4) * p + 1) * r.image.width + (x + 4) * p + 1] == 0) == m[x, y], "module \(x), \(y)")
            }
        }
        #expect(ZBar.scan(r.image).map { String(decoding: $0.bytes, as: UTF8.self) } == [text])
    }

    @Test func alignmentCentresFollowTheStandard() {
        #expect(FinderLocator.alignmentCentres(dimension: 21) == [])
        #expect(FinderLocator.alignmentCentres(dimension: 25) == [6, 18])
        #expect(FinderLocator.alignmentCentres(dimension: 45) == [6, 22, 38])
        #expect(FinderLocator.alignmentCentres(dimension: 145) == [6, 34, 60, 86, 112, 138])
        #expect(FinderLocator.alignmentCentres(dimension: 177) == [6, 30, 58, 86, 114, 142, 170])
    }

    /// Codes read from each alternating map of the first triple: straightened, redrawn with a
    /// threshold from a window one module around each centre, redrawn from the binarised image.
    static func reads(_ image: GrayImage) throws -> (straightened: Int, window: Int, binarised: Int) {
        let bin = ImageOps.binarise(image)
        let triple = try #require(FinderLocator.triples(FinderLocator.finders(in: bin)).first)
        let maps = FinderLocator.maps(triple, bin: bin).filter { FinderLocator.timing(bin, dimension: $0.dimension, map: $0.map) >= 0.7 }
        #expect(!maps.isEmpty)
        var counts = (straightened: 0, window: 0, binarised: 0)
        for map in maps {
            counts.straightened += ZBar.scan(FinderLocator.rectify(image, dimension: map.dimension, toSource: map.map).image).count
            counts.window += ZBar.scan(FinderLocator.grid(image, dimension: map.dimension, toSource: map.map).image).count
            counts.binarised += ZBar.scan(FinderLocator.grid(binarised: bin, dimension: map.dimension, toSource: map.map).image).count
        }
        return counts
    }

    /// zxing-cpp's sample #1086 (Apache-2.0, fixtures/external/SOURCE-zxing-cpp.txt): bold,
    /// uneven modules that neither zbar nor the straightened picture reads; the redrawn grid does.
    @Test func readsBoldModulesFromTheRedrawnGrid() throws {
        let image = try ImageDecoder.decode(Array(Fixtures.data("external/zxing-cpp-qrcode-2-1086.png")))
        let expected = try String(contentsOf: Fixtures.url("external/zxing-cpp-qrcode-2-1086.txt"), encoding: .utf8)
        #expect(ZBar.scan(image).isEmpty)
        let reads = try Self.reads(image)
        #expect(reads.straightened == 0 && reads.window + reads.binarised >= 1)
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
    }

    /// The per-block threshold: a code whose light falls to a quarter from one side to the other
    /// keeps its three finders; a flat light area stays light and the inside of a flat dark one
    /// dark (a block without contrast takes its threshold from its neighbours).
    @Test func blockThresholdFollowsTheLightAndKeepsFlatAreas() throws {
        let m = try QREncoder.encode("BLOCK THRESHOLD", mode: .alphanumeric, correction: .M)
        let code = QRRender.grayImage(m, scale: 4)
        let falling = GrayImage(width: code.width, height: code.height, pixels: code.pixels.indices.map { i in
            let x = Double(i % code.width) / Double(code.width)
            return UInt8(Double(code.pixels[i]) * (1 - 0.75 * x) * 0.9 + 12)
        })
        let finders = FinderLocator.finders(in: ImageOps.binariseBlocks(falling, block: 4))
        #expect(FinderLocator.triples(finders).first?.dimension == m.size)
        let light = ImageOps.binariseBlocks(GrayImage(width: 64, height: 64, pixels: [UInt8](repeating: 200, count: 64 * 64)), block: 8)
        #expect(light.pixels.allSatisfy { $0 == 255 })
        var square = [UInt8](repeating: 220, count: 96 * 96)
        for y in 24..<72 { for x in 24..<72 { square[y * 96 + x] = 30 } }
        let dark = ImageOps.binariseBlocks(GrayImage(width: 96, height: 96, pixels: square), block: 8)
        #expect(dark.pixels[48 * 96 + 48] == 0 && dark.pixels[4 * 96 + 4] == 255)
    }

    /// jsQR's japanese-jean-ad photo (Apache-2.0, fixtures/external/SOURCE-jsqr.txt), in grey as
    /// a JPEG: the mean window locates nothing it can read; a threshold per block does.
    @Test func readsAPhotoThroughTheBlockThreshold() throws {
        let image = try ImageDecoder.decode(Array(Fixtures.data("external/jsqr-japanese-jean-ad.jpg")))
        let expected = Array(try Fixtures.data("external/jsqr-japanese-jean-ad.bin"))  // Shift_JIS
        #expect(ZBar.scan(image).isEmpty)
        #expect(Self.located(image).codes.isEmpty)
        let pass: QRScanner.Pass = ("first", { (image, 1) })
        var codes: [[UInt8]] = []
        for block in QRScanner.blockSizes(pass) {
            _ = QRScanner.locate(pass, binarise: { ImageOps.binariseBlocks($0, block: block) }, deadline: CPUDeadline(after: .seconds(30))) { bytes, _, _ in
                codes.append(bytes)
            }
        }
        #expect(codes.contains(expected))
        // A budget a debug build keeps within: what is read, not how fast, is tested here.
        #expect(QRScanner.scan(image, budget: .seconds(30)).map { $0.bytes } == [expected])
    }

    /// Blur of half a module merges neighbouring modules for zbar and for the locator's
    /// binarisation (its window is a sixteenth of the picture); a window one module around each
    /// centre still tells them apart.
    @Test func readsABlurredCodeFromTheWindowThreshold() throws {
        let image = try Self.image("blur.png")
        let expected = try Self.text("blur.txt")
        #expect(ZBar.scan(image).isEmpty)
        let reads = try Self.reads(image)
        #expect(reads.straightened == 0 && reads.binarised == 0 && reads.window >= 1)
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
    }

    /// Modules of two pixels or less in perspective: the locator finds no triple at this size;
    /// in a small picture where nothing was read it looks again at twice the size.
    @Test func readsSmallModulesAtTwiceTheSize() throws {
        let image = try Self.image("squeezed.png")
        let expected = try Self.text("squeezed.txt")
        #expect(ZBar.scan(image).isEmpty)
        #expect(FinderLocator.triples(FinderLocator.finders(in: ImageOps.binarise(image))).isEmpty)
        #expect(max(image.width, image.height) <= QRScanner.smallSide)
        #expect(Self.located(ImageOps.upscaleBilinear(image)).codes == [expected])
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
    }

    /// zxing-cpp's sample estimate-tilt.jpg (Apache-2.0, fixtures/external/SOURCE-zxing-cpp.txt):
    /// a version 1 code filling a 95 x 75 photo, modules of two or three pixels. The usual window
    /// (a sixteenth of the picture) is narrower than a finder, whose dark centre comes out light;
    /// the second look at twice the size widens it.
    @Test func readsACodeFillingASmallPictureWithAWiderWindow() throws {
        let image = try ImageDecoder.decode(Array(Fixtures.data("external/zxing-cpp-qrcode-2-estimate-tilt.jpg")))
        let expected = try String(contentsOf: Fixtures.url("external/zxing-cpp-qrcode-2-estimate-tilt.txt"), encoding: .utf8)
        #expect(ZBar.scan(image).isEmpty)
        #expect(Self.located(image).codes.isEmpty)
        let upscaled = ImageOps.upscaleBilinear(image)
        #expect(Self.located(upscaled).codes.isEmpty)
        var codes: [String] = []
        _ = QRScanner.locate(("upscaled", { (upscaled, 0.5) }), windowDivisor: 8, deadline: CPUDeadline(after: .seconds(30))) { bytes, _, _ in
            codes.append(String(decoding: bytes, as: UTF8.self))
        }
        #expect(codes == [expected])
        #expect(QRScanner.scan(image).map { String(decoding: $0.bytes, as: UTF8.self) } == [expected])
    }

    @Test func bilinearUpscaleKeepsFlatAreasAndBlendsEdges() {
        let image = GrayImage(width: 3, height: 1, pixels: [0, 0, 200])
        let up = ImageOps.upscaleBilinear(image)
        #expect(up.width == 6 && up.height == 2)
        #expect(Array(up.pixels[0..<6]) == [0, 0, 0, 50, 150, 200])
        #expect(Array(up.pixels[6..<12]) == Array(up.pixels[0..<6]))
    }

    /// A picture lit by `light` (x, y) with sensor noise of up to ±8 × `noise`, from a fixed seed.
    static func noisy(width w: Int, height h: Int, noise: Double, light: (Int, Int) -> Double) -> GrayImage {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var pixels = [UInt8](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                pixels[y * w + x] = UInt8(max(0, min(255, light(x, y) + (Double(Int(state >> 59)) - 8) * noise)))
            }
        }
        return GrayImage(width: w, height: h, pixels: pixels)
    }

    /// A photo (more than a megapixel in the first pass): textured and unevenly lit, with no code
    /// the locator sees nothing finder-like and the scan ends after one light zbar look; with a
    /// code drawn in, it is read.
    @Test func photoWithoutFindersEndsEarlyAndAPhotoWithACodeIsRead() throws {
        let w = 1400, h = 1000
        let photo = ImageOps.boxBlur(Self.noisy(width: w, height: h, noise: 3) { x, y in 150 + 60 * sin(Double(x) / 300) * cos(Double(y) / 200) })
        #expect(w * h > QRScanner.photoPixels)
        #expect(Self.located(photo).seen == 0)
        #expect(QRScanner.scan(photo, budget: .seconds(30)).isEmpty)

        let m = try QREncoder.encode("MEISHI PHOTO", mode: .alphanumeric, correction: .M)
        let code = QRRender.grayImage(m, scale: 5)
        var withCode = photo
        for y in 0..<code.height { for x in 0..<code.width { withCode.pixels[(300 + y) * w + 500 + x] = code.pixels[y * code.width + x] } }
        #expect(Self.located(withCode).seen >= 3)
        #expect(QRScanner.scan(withCode).map { String(decoding: $0.bytes, as: UTF8.self) } == ["MEISHI PHOTO"])
    }

    /// A business card seen from afar (issue 28): a code of 2.9-pixel modules, blurred, on a card
    /// in a 1600x1200 photo. The mean window sees nothing finder-like and zbar's light look reads
    /// nothing, where the scan used to end; the threshold per block of 4 pixels sees the finders.
    @Test func smallBlurredCodeOnAPhotoIsLocatedOnAFinerThreshold() throws {
        let w = 1600, h = 1200
        var card = Self.noisy(width: w, height: h, noise: 2) { x, y in
            (x >= 500 && x < 1220 && y >= 400 && y < 840 ? 235 : 110) + 10 * sin(Double(x) / 300)
        }
        let m = try QREncoder.encode("https://ex.org/3", mode: .utf8, correction: .M)
        let code = ImageOps.downscale(QRRender.grayImage(m, scale: 8), by: 2.8)
        for y in 0..<code.height { for x in 0..<code.width { card.pixels[(560 + y) * w + 1050 + x] = code.pixels[y * code.width + x] } }
        let photo = ImageOps.boxBlur(ImageOps.boxBlur(card))
        #expect(Self.located(photo).seen == 0)
        #expect(ZBar.scan(photo, density: 2).isEmpty)
        #expect(FinderLocator.triples(FinderLocator.finders(in: ImageOps.binariseBlocks(photo, block: 4))).count == 1)
        let found = QRScanner.scan(photo, budget: .seconds(30))
        #expect(found.map { String(decoding: $0.bytes, as: UTF8.self) } == ["https://ex.org/3"])
        #expect(found.first?.pass == "finders")
    }

    @Test(arguments: ["nocode-checkerboard.png", "nocode-blocks.png", "nocode-finders.png"])
    func noCodeNoDecode(_ name: String) throws {
        let image = try Self.image(name)
        let located = Self.located(image)
        #expect(located.codes.isEmpty)
        // Lone finder patterns are finder-like (the other passes get their look); blocks of text
        // and a checkerboard are not, and the scan ends after zbar's first look.
        #expect(name == "nocode-finders.png" ? located.seen >= 5 : located.seen == 0)
        #expect(QRScanner.scan(image).isEmpty)
    }
}
