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
            for code in ZBar.scan(candidate) where !found.contains(where: { $0.bytes == code.bytes }) {
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
}
