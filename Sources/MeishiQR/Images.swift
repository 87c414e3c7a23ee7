internal import CJPEGShim
internal import CPNG
internal import CWebP

/// An 8-bit grayscale image, rows top to bottom.
public struct GrayImage: Equatable, Sendable {
    public let width: Int
    public let height: Int
    public var pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height)
        self.width = width
        self.height = height
        self.pixels = pixels
    }
}

/// Reads PNG (libpng), JPEG (libjpeg-turbo), WebP (libwebp) and binary PGM/PPM into grayscale.
public enum ImageDecoder {
    /// Largest image accepted: 50 megapixels, checked from the header before decoding.
    public static let maximumPixels = 50_000_000
    /// Photos are decoded at 1/2, 1/4 or 1/8 (JPEG DCT scaling, cheaper than a full decode) while
    /// their longer side stays at least this long: the scanner looks at 1600 pixels at most.
    public static let preferredJPEGSide = 1600

    public static func decode(_ bytes: [UInt8], maximumPixels: Int = maximumPixels) throws(QRError) -> GrayImage {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return try PNGCodec.decode(bytes, maximumPixels: maximumPixels) }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return try decodeJPEG(bytes, maximumPixels: maximumPixels) }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return try WebPCodec.decode(bytes, maximumPixels: maximumPixels)
        }
        if bytes.count > 2, bytes[0] == UInt8(ascii: "P"), [UInt8(ascii: "5"), UInt8(ascii: "6")].contains(bytes[1]) {
            return try PNM.decode(bytes, maximumPixels: maximumPixels)
        }
        throw .notAnImage
    }

    static func decodeJPEG(_ bytes: [UInt8], maximumPixels: Int) throws(QRError) -> GrayImage {
        var pixels: UnsafeMutablePointer<UInt8>?
        var w: UInt32 = 0, h: UInt32 = 0, fw: UInt32 = 0, fh: UInt32 = 0
        var message = [CChar](repeating: 0, count: 200)
        // The scale is chosen from the header: a large photo is decoded once, already shrunk.
        let status = bytes.withUnsafeBufferPointer { b in
            meishi_jpeg_decode_gray(b.baseAddress, b.count, UInt(maximumPixels), UInt32(preferredJPEGSide), &pixels, &w, &h, &fw, &fh,
                                    &message, message.count)
        }
        switch status {
        case 0:
            defer { meishi_jpeg_free(pixels) }
            return GrayImage(width: Int(w), height: Int(h), pixels: Array(UnsafeBufferPointer(start: pixels, count: Int(w * h))))
        case 2:
            throw .tooManyPixels(width: Int(fw), height: Int(fh), limit: maximumPixels)
        case 3:
            throw .encoderFailed("out of memory decoding JPEG")
        case 4:
            throw .tooCostly(message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        default:
            let text = message.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw .corruptImage(text.isEmpty ? "invalid JPEG" : text)
        }
    }
}

/// PNG through libpng's simplified API (png_image), which reports errors in `message`.
enum PNGCodec {
    static let formatGA: UInt32 = 1  // PNG_FORMAT_GA: gray + alpha, 8 bits each
    static let formatGray: UInt32 = 0  // PNG_FORMAT_GRAY
    static let formatRGBA: UInt32 = 3  // PNG_FORMAT_RGBA: red, green, blue, alpha, 8 bits each
    static let formatFlagColour: UInt32 = 2  // PNG_FORMAT_FLAG_COLOR

    static func decode(_ bytes: [UInt8], maximumPixels: Int) throws(QRError) -> GrayImage {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        let began = bytes.withUnsafeBufferPointer { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
        guard began != 0 else { throw .corruptImage(message(of: &image)) }
        let w = Int(image.width), h = Int(image.height)
        guard w * h <= maximumPixels else {
            png_image_free(&image)
            throw .tooManyPixels(width: w, height: h, limit: maximumPixels)
        }
        // Read with alpha and put transparent parts on white: a dark code on a transparent
        // background must not turn into a black square. A colour picture is read as RGBA and
        // made grey here with integer luma weights (as PNM is): libpng's own colour-to-grey
        // conversion goes through linear light and costs more than the scan of a small picture.
        let colour = image.format & formatFlagColour != 0
        let channels = colour ? 4 : 2
        image.format = colour ? formatRGBA : formatGA
        var samples = [UInt8](repeating: 0, count: w * h * channels)
        let done = samples.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
        guard done != 0 else { throw .corruptImage(message(of: &image)) }
        let gray = samples.withUnsafeBufferPointer { onWhite($0, count: w * h, channels: channels, colour: colour) }
        return GrayImage(width: w, height: h, pixels: gray)
    }

    /// Grey (GA) or colour (RGBA) samples made grey with integer luma weights (as PNM is) and put
    /// on white by their alpha: a dark code on a transparent background must not turn into a
    /// black square.
    static func onWhite(_ s: UnsafeBufferPointer<UInt8>, count: Int, channels: Int, colour: Bool) -> [UInt8] {
        var gray = [UInt8](repeating: 255, count: count)
        gray.withUnsafeMutableBufferPointer { out in
            for i in 0..<count {
                let p = i * channels
                let g = colour ? (Int(s[p]) * 299 + Int(s[p + 1]) * 587 + Int(s[p + 2]) * 114) / 1000 : Int(s[p])
                let a = Int(s[p + channels - 1])
                out[i] = UInt8((g * a + 255 * (255 - a)) / 255)
            }
        }
        return gray
    }

    static func encode(_ g: GrayImage) throws(QRError) -> [UInt8] {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        image.width = UInt32(g.width)
        image.height = UInt32(g.height)
        image.format = formatGray
        var size = 0
        let sized = g.pixels.withUnsafeBytes { png_image_write_to_memory(&image, nil, &size, 0, $0.baseAddress, 0, nil) }
        guard sized != 0 else { throw .encoderFailed(message(of: &image)) }
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBytes { o in
            g.pixels.withUnsafeBytes { png_image_write_to_memory(&image, o.baseAddress, &size, 0, $0.baseAddress, 0, nil) }
        }
        guard written != 0 else { throw .encoderFailed(message(of: &image)) }
        return Array(out.prefix(size))
    }

    static func message(of image: inout png_image) -> String {
        withUnsafeBytes(of: &image.message) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// Binary PGM (P5) and PPM (P6), 8-bit samples.
enum PNM {
    static func decode(_ bytes: [UInt8], maximumPixels: Int) throws(QRError) -> GrayImage {
        var i = 2
        func token() -> Int? {
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "#") {
                    while i < bytes.count, bytes[i] != 0x0A { i += 1 }
                } else if [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) {
                    i += 1
                } else {
                    break
                }
            }
            var v = 0
            var digits = 0
            while i < bytes.count, (0x30...0x39).contains(bytes[i]), digits < 9 {
                v = v * 10 + Int(bytes[i] - 0x30)
                i += 1
                digits += 1
            }
            return digits > 0 ? v : nil
        }
        guard let w = token(), let h = token(), let maxval = token(), w > 0, h > 0, (1...255).contains(maxval),
              i < bytes.count else { throw .corruptImage("bad PNM header") }
        guard w * h <= maximumPixels else { throw .tooManyPixels(width: w, height: h, limit: maximumPixels) }
        i += 1  // the single whitespace after maxval
        let channels = bytes[1] == UInt8(ascii: "6") ? 3 : 1
        guard bytes.count - i >= w * h * channels else { throw .corruptImage("truncated PNM data") }
        var gray = [UInt8](repeating: 0, count: w * h)
        for p in 0..<(w * h) {
            let v: Int
            if channels == 3 {
                let r = Int(bytes[i + 3 * p]), g = Int(bytes[i + 3 * p + 1]), b = Int(bytes[i + 3 * p + 2])
                v = (r * 299 + g * 587 + b * 114) / 1000
            } else {
                v = Int(bytes[i + p])
            }
            // A sample above maxval (a hostile file) is clamped, never allowed past 255.
            gray[p] = UInt8(min(v, maxval) * 255 / maxval)
        }
        return GrayImage(width: w, height: h, pixels: gray)
    }
}

/// WebP (lossy or lossless, with or without alpha; not animated) through libwebp. The size is
/// read from the header and checked before anything is decoded.
enum WebPCodec {
    static func decode(_ bytes: [UInt8], maximumPixels: Int) throws(QRError) -> GrayImage {
        var width: Int32 = 0, height: Int32 = 0
        let known = bytes.withUnsafeBufferPointer { WebPGetInfo($0.baseAddress, $0.count, &width, &height) }
        guard known != 0, width > 0, height > 0 else { throw .corruptImage("not a WebP picture libwebp can read (an animated one?)") }
        let w = Int(width), h = Int(height)
        guard w * h <= maximumPixels else { throw .tooManyPixels(width: w, height: h, limit: maximumPixels) }
        let rgba = bytes.withUnsafeBufferPointer { WebPDecodeRGBA($0.baseAddress, $0.count, &width, &height) }
        guard let rgba else { throw .corruptImage("the WebP data is damaged") }
        defer { WebPFree(rgba) }
        precondition(Int(width) == w && Int(height) == h)
        return GrayImage(width: w, height: h,
                         pixels: PNGCodec.onWhite(UnsafeBufferPointer(start: rgba, count: w * h * 4), count: w * h, channels: 4, colour: true))
    }
}
