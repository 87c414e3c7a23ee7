/// Image transformations used by the scanner's retry passes.
public enum ImageOps {
    /// Area-average downscale by `factor` (> 1).
    public static func downscale(_ img: GrayImage, by factor: Double) -> GrayImage {
        let w = max(1, Int(Double(img.width) / factor)), h = max(1, Int(Double(img.height) / factor))
        // Each output pixel averages the source rows y0..<y1 and columns x0..<x1 (spans computed once).
        func spans(_ n: Int, _ limit: Int) -> [(Int, Int)] {
            (0..<n).map { i in
                let a = Int(Double(i) * factor)
                return (a, max(a + 1, min(limit, Int(Double(i + 1) * factor))))
            }
        }
        let columns = spans(w, img.width), rows = spans(h, img.height)
        var out = [UInt8](repeating: 0, count: w * h)
        var sums = [Int](repeating: 0, count: w)
        img.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                sums.withUnsafeMutableBufferPointer { acc in
                    for y in 0..<h {
                        let (y0, y1) = rows[y]
                        for x in 0..<w { acc[x] = 0 }
                        for yy in y0..<y1 {
                            let row = yy * img.width
                            for x in 0..<w {
                                let (x0, x1) = columns[x]
                                var sum = 0
                                for xx in x0..<x1 { sum &+= Int(src[row + xx]) }
                                acc[x] &+= sum
                            }
                        }
                        let rowsIn = y1 - y0
                        for x in 0..<w { dst[y * w + x] = UInt8(acc[x] / (rowsIn * (columns[x].1 - columns[x].0))) }
                    }
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

    /// Bilinear upscale to twice the width and height (pixel centres kept in place).
    public static func upscaleBilinear(_ img: GrayImage) -> GrayImage {
        let w = img.width * 2, h = img.height * 2
        var out = [UInt8](repeating: 0, count: w * h)
        // Output pixel k lies between source pixels (k - 1) / 2 and (k + 1) / 2, weighted 3:1.
        func taps(_ k: Int, _ n: Int) -> (Int, Int) {
            let near = k / 2, far = k % 2 == 0 ? max(0, near - 1) : min(n - 1, near + 1)
            return (near, far)
        }
        img.pixels.withUnsafeBufferPointer { src in
            for y in 0..<h {
                let (y0, y1) = taps(y, img.height)
                for x in 0..<w {
                    let (x0, x1) = taps(x, img.width)
                    let a = Int(src[y0 * img.width + x0]) * 3 + Int(src[y0 * img.width + x1])
                    let b = Int(src[y1 * img.width + x0]) * 3 + Int(src[y1 * img.width + x1])
                    out[y * w + x] = UInt8((a * 3 + b + 8) / 16)
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
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

    /// Local-mean adaptive threshold (integral image; window about 1/`windowDivisor` of the
    /// shorter side), which evens out shadows and uneven light across a photographed code.
    public static func binarise(_ img: GrayImage, windowDivisor: Int = 16) -> GrayImage {
        let w = img.width, h = img.height
        let r = max(4, min(w, h) / windowDivisor)
        // Integral image with a leading row and column of zeros, summed modulo 2^32: a window's
        // sum (far below 2^32 for any image the decoder accepts) comes out exact all the same.
        let iw = w + 1
        var integral = [UInt32](repeating: 0, count: iw * (h + 1))
        var out = [UInt8](repeating: 255, count: w * h)
        img.pixels.withUnsafeBufferPointer { src in
            integral.withUnsafeMutableBufferPointer { ii in
                for y in 0..<h {
                    var row: UInt32 = 0
                    let s = y * w, above = y * iw + 1, here = (y + 1) * iw + 1
                    for x in 0..<w {
                        row &+= UInt32(src[s + x])
                        ii[here + x] = ii[above + x] &+ row
                    }
                }
                out.withUnsafeMutableBufferPointer { dst in
                    for y in 0..<h {
                        let y0 = max(0, y - r), y1 = min(h, y + r + 1)
                        let top = y0 * iw, bottom = y1 * iw
                        for x in 0..<w {
                            let x0 = max(0, x - r), x1 = min(w, x + r + 1)
                            let sum = Int(ii[bottom + x1] &- ii[top + x1] &- ii[bottom + x0] &+ ii[top + x0])
                            // Dark below 93 % of the window's mean, compared without dividing.
                            if Int(src[y * w + x]) * 100 * ((y1 - y0) * (x1 - x0)) < sum * 93 { dst[y * w + x] = 0 }
                        }
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// Threshold per block of `block` × `block` pixels (a hybrid of a local and a global view):
    /// each block's threshold is the mean of the block means in the 5 × 5 blocks around it, so it
    /// follows uneven light at the scale of a few blocks; a flat block (its pixels within
    /// `flatRange` of each other: paper, or a module's inside) takes half its minimum, or the mean
    /// of its upper and left neighbours' thresholds when that is lower, which keeps a flat dark
    /// area dark and a flat light one light. Run at several block sizes, it sees codes whose
    /// modules are a few pixels and codes filling the picture, where one window fits neither.
    public static func binariseBlocks(_ img: GrayImage, block: Int = 8, flatRange: Int = 24) -> GrayImage {
        let w = img.width, h = img.height
        let bw = (w + block - 1) / block, bh = (h + block - 1) / block
        var means = [Int](repeating: 0, count: bw * bh)
        img.pixels.withUnsafeBufferPointer { src in
            for by in 0..<bh {
                for bx in 0..<bw {
                    let x0 = bx * block, y0 = by * block
                    let x1 = min(w, x0 + block), y1 = min(h, y0 + block)
                    var sum = 0, lo = 255, hi = 0
                    for y in y0..<y1 {
                        let row = y * w
                        for x in x0..<x1 {
                            let v = Int(src[row + x])
                            sum += v
                            if v < lo { lo = v }
                            if v > hi { hi = v }
                        }
                    }
                    var mean = sum / ((x1 - x0) * (y1 - y0))
                    if hi - lo <= flatRange {
                        mean = lo / 2
                        if bx > 0, by > 0 {
                            let around = (2 * means[by * bw + bx - 1] + means[(by - 1) * bw + bx] + means[(by - 1) * bw + bx - 1]) / 4
                            if lo < around { mean = around }
                        }
                    }
                    means[by * bw + bx] = mean
                }
            }
        }
        var out = [UInt8](repeating: 255, count: w * h)
        img.pixels.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for by in 0..<bh {
                    let cy = min(max(by, 2), max(2, bh - 3))
                    for bx in 0..<bw {
                        let cx = min(max(bx, 2), max(2, bw - 3))
                        var sum = 0, n = 0
                        for yy in max(0, cy - 2)...min(bh - 1, cy + 2) {
                            for xx in max(0, cx - 2)...min(bw - 1, cx + 2) { sum += means[yy * bw + xx]; n += 1 }
                        }
                        let threshold = sum / n
                        let x0 = bx * block, y0 = by * block
                        for y in y0..<min(h, y0 + block) {
                            let row = y * w
                            for x in x0..<min(w, x0 + block) where Int(src[row + x]) <= threshold { dst[row + x] = 0 }
                        }
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }
}
