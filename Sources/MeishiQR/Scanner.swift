internal import CZBar

/// One QR code found in an image.
public struct FoundCode: Equatable, Sendable {
    /// The decoded bytes, exactly as stored in the symbol (zbar runs in binary mode).
    public let bytes: [UInt8]
    /// Corner points in the original image's pixel coordinates.
    public let points: [(x: Int, y: Int)]
    /// Which preprocessing pass found it (for diagnostics).
    public let pass: String

    public static func == (a: FoundCode, b: FoundCode) -> Bool { a.bytes == b.bytes && a.pass == b.pass }
}

/// Finds QR codes with libzbar, retrying on transformed copies of the image when the
/// original yields nothing: downscaled, contrast-stretched, locally binarised, rescaled.
public enum QRScanner {
    /// Longest side zbar sees in the first pass; larger images are area-downscaled first.
    static let firstPassSide = 1600

    public static func scan(_ image: GrayImage) -> [FoundCode] {
        var found: [FoundCode] = []
        for (name, make) in passes(for: image) {
            guard let (candidate, factor) = make() else { continue }
            for code in zbarScan(candidate) where !found.contains(where: { $0.bytes == code.bytes }) {
                found.append(FoundCode(bytes: code.bytes, points: code.points.map { (Int(Double($0.x) * factor), Int(Double($0.y) * factor)) },
                                       pass: name))
            }
            if !found.isEmpty { break }
        }
        return found
    }

    typealias Pass = (String, () -> (GrayImage, Double)?)

    /// The retry passes, cheapest first. Transformations work on a copy at most
    /// `firstPassSide` pixels long, so a large photo without a code costs a bounded amount.
    static func passes(for image: GrayImage) -> [Pass] {
        let longest = max(image.width, image.height)
        let f = longest > firstPassSide ? Double(longest) / Double(firstPassSide) : 1
        let base = f > 1 ? ImageOps.downscale(image, by: f) : image
        let side = max(base.width, base.height)
        var out: [Pass] = [("first", { (base, f) })]
        if f > 1 { out.append(("full-resolution", { (image, 1) })) }
        out.append(("stretched", { (ImageOps.stretchContrast(base), f) }))
        out.append(("binarised", { (ImageOps.binarise(base), f) }))
        out.append(("smoothed+binarised", { (ImageOps.binarise(ImageOps.boxBlur(base)), f) }))
        // Codes that touch the image edge have no quiet zone: give them one.
        let border = max(8, side / 16)
        out.append(("padded", { (ImageOps.pad(base, by: border), f) }))
        if side < 800 {
            let k = side < 200 ? 4 : 2
            out.append(("padded+upscaled", { (ImageOps.upscale(ImageOps.pad(base, by: border), by: k), f / Double(k)) }))
            out.append(("upscaled+binarised", { (ImageOps.binarise(ImageOps.upscale(base, by: 2)), f / 2) }))
            out.append(("sharpened", { (ImageOps.sharpen(ImageOps.upscale(base, by: 2)), f / 2) }))
        } else {
            out.append(("sharpened", { (ImageOps.sharpen(base), f) }))
        }
        if side > 600 {
            out.append(("half", { (ImageOps.downscale(base, by: 2), 2 * f) }))
            out.append(("half+binarised", { (ImageOps.binarise(ImageOps.downscale(base, by: 2)), 2 * f) }))
        }
        if side > 1200 { out.append(("quarter", { (ImageOps.downscale(base, by: 4), 4 * f) })) }
        return out
    }

    static func zbarScan(_ image: GrayImage) -> [(bytes: [UInt8], points: [(x: Int, y: Int)])] {
        guard let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        // Binary: zbar returns the bytes as stored, instead of guessing a charset and converting.
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_TEST_INVERTED, 1)
        guard let zimage = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(zimage) }
        let y800: UInt = 0x30303859  // fourcc "Y800": 8-bit grayscale
        zbar_image_set_format(zimage, y800)
        zbar_image_set_size(zimage, UInt32(image.width), UInt32(image.height))
        return image.pixels.withUnsafeBufferPointer { buffer in
            zbar_image_set_data(zimage, buffer.baseAddress, UInt(buffer.count), nil)
            guard zbar_scan_image(scanner, zimage) > 0 else { return [] }
            var out: [(bytes: [UInt8], points: [(x: Int, y: Int)])] = []
            var symbol = zbar_image_first_symbol(zimage)
            while let s = symbol {
                if zbar_symbol_get_type(s) == ZBAR_QRCODE, let data = zbar_symbol_get_data(s) {
                    let length = Int(zbar_symbol_get_data_length(s))
                    let bytes = data.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
                    let points = (0..<zbar_symbol_get_loc_size(s)).map {
                        (x: Int(zbar_symbol_get_loc_x(s, $0)), y: Int(zbar_symbol_get_loc_y(s, $0)))
                    }
                    out.append((bytes, points))
                }
                symbol = zbar_symbol_next(s)
            }
            // The buffer belongs to Swift: detach it before the image is destroyed.
            zbar_image_set_data(zimage, nil, 0, nil)
            return out
        }
    }
}

/// Image transformations used by the scanner's retry passes.
public enum ImageOps {
    /// Area-average downscale by `factor` (> 1).
    public static func downscale(_ img: GrayImage, by factor: Double) -> GrayImage {
        let w = max(1, Int(Double(img.width) / factor)), h = max(1, Int(Double(img.height) / factor))
        var out = [UInt8](repeating: 0, count: w * h)
        img.pixels.withUnsafeBufferPointer { src in
            for y in 0..<h {
                let y0 = Int(Double(y) * factor), y1 = max(y0 + 1, min(img.height, Int(Double(y + 1) * factor)))
                for x in 0..<w {
                    let x0 = Int(Double(x) * factor), x1 = max(x0 + 1, min(img.width, Int(Double(x + 1) * factor)))
                    var sum = 0
                    for yy in y0..<y1 {
                        let row = yy * img.width
                        for xx in x0..<x1 { sum += Int(src[row + xx]) }
                    }
                    out[y * w + x] = UInt8(sum / ((y1 - y0) * (x1 - x0)))
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Nearest-neighbour upscale by an integer factor.
    public static func upscale(_ img: GrayImage, by factor: Int) -> GrayImage {
        let w = img.width * factor, h = img.height * factor
        var out = [UInt8](repeating: 0, count: w * h)
        for y in 0..<h {
            let srcRow = (y / factor) * img.width
            for x in 0..<w { out[y * w + x] = img.pixels[srcRow + x / factor] }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Adds a white border of `n` pixels on every side.
    public static func pad(_ img: GrayImage, by n: Int) -> GrayImage {
        let w = img.width + 2 * n, h = img.height + 2 * n
        var out = [UInt8](repeating: 255, count: w * h)
        for y in 0..<img.height {
            let dst = (y + n) * w + n
            out.replaceSubrange(dst..<dst + img.width, with: img.pixels[(y * img.width)..<((y + 1) * img.width)])
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Unsharp mask (2 x original - 3x3 blur), to restore module edges in blurred photos.
    public static func sharpen(_ img: GrayImage) -> GrayImage {
        let blurred = boxBlur(img)
        var out = img.pixels
        for i in 0..<out.count {
            out[i] = UInt8(max(0, min(255, 2 * Int(img.pixels[i]) - Int(blurred.pixels[i]))))
        }
        return GrayImage(width: img.width, height: img.height, pixels: out)
    }

    /// Maps the 1st..99th percentile of intensities to 0..255.
    public static func stretchContrast(_ img: GrayImage) -> GrayImage {
        var histogram = [Int](repeating: 0, count: 256)
        for p in img.pixels { histogram[Int(p)] += 1 }
        let cut = img.pixels.count / 100
        var lo = 0, acc = 0
        while lo < 255, acc + histogram[lo] <= cut { acc += histogram[lo]; lo += 1 }
        var hi = 255
        acc = 0
        while hi > 0, acc + histogram[hi] <= cut { acc += histogram[hi]; hi -= 1 }
        guard hi > lo else { return img }
        let table = (0..<256).map { UInt8(max(0, min(255, ($0 - lo) * 255 / (hi - lo)))) }
        return GrayImage(width: img.width, height: img.height, pixels: img.pixels.map { table[Int($0)] })
    }

    /// 3x3 box blur, to quiet sensor noise and JPEG ringing before thresholding.
    public static func boxBlur(_ img: GrayImage) -> GrayImage {
        let w = img.width, h = img.height
        var out = img.pixels
        guard w > 2, h > 2 else { return img }
        for y in 1..<(h - 1) {
            for x in 1..<(w - 1) {
                var s = 0
                for dy in -1...1 { for dx in -1...1 { s += Int(img.pixels[(y + dy) * w + x + dx]) } }
                out[y * w + x] = UInt8(s / 9)
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Local-mean adaptive threshold (integral image; window about 1/16 of the shorter side),
    /// which evens out shadows and uneven light across a photographed code.
    public static func binarise(_ img: GrayImage) -> GrayImage {
        let w = img.width, h = img.height
        let r = max(4, min(w, h) / 16)
        var integral = [Int](repeating: 0, count: (w + 1) * (h + 1))
        for y in 0..<h {
            var row = 0
            for x in 0..<w {
                row += Int(img.pixels[y * w + x])
                integral[(y + 1) * (w + 1) + x + 1] = integral[y * (w + 1) + x + 1] + row
            }
        }
        var out = [UInt8](repeating: 255, count: w * h)
        for y in 0..<h {
            let y0 = max(0, y - r), y1 = min(h, y + r + 1)
            for x in 0..<w {
                let x0 = max(0, x - r), x1 = min(w, x + r + 1)
                let sum = integral[y1 * (w + 1) + x1] - integral[y0 * (w + 1) + x1] - integral[y1 * (w + 1) + x0] + integral[y0 * (w + 1) + x0]
                let mean = sum / ((y1 - y0) * (x1 - x0))
                out[y * w + x] = Int(img.pixels[y * w + x]) * 100 < mean * 93 ? 0 : 255
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }
}
