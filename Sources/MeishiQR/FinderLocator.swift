import Foundation

/// Finds QR codes by their finder patterns, as zxing's detector does, and straightens each one
/// for zbar: zbar's own finder gives up on strong perspective, small modules and crowds.
///
/// 1. Rows of a locally binarised image are read as runs; five runs dark-light-dark-light-dark
///    in the proportions 1:1:3:1:1 mark a finder candidate, confirmed down its column and again
///    along its row and one diagonal, then merged with the candidates it repeats.
/// 2. Three finders of similar module size that form a right angle with legs of similar length
///    are one code: the corner at the right angle is the top-left, the cross product says which
///    leg is the top edge, and the legs in modules give the symbol's side (4v + 17).
/// 3. Rays from each finder's centre find the outer corners of its 7x7 square; a least-squares
///    homography from the twelve corners and three centres (plus the alignment pattern, searched
///    where that fit puts it) maps modules to pixels, tried at the estimated side and the sides
///    next to it. A map whose timing patterns do not alternate is dropped before zbar is asked.
/// 4. The code is drawn upright at `modulePixels` per module with a quiet zone and handed to
///    zbar, whose Reed-Solomon check still decides what is read.
enum FinderLocator {
    /// Pixels per module in the straightened image: zbar reads 3-5 comfortably.
    static let modulePixels = 4.0

    struct Finder {
        var x: Double
        var y: Double
        var module: Double
        var count: Int
    }

    /// Three finders of one probable code, top-left at the right angle.
    struct Triple {
        let topLeft: Finder
        let topRight: Finder
        let bottomLeft: Finder
        let indices: [Int]
        let dimension: Int
        let score: Double
    }

    /// A straightened candidate and the map from its pixels back to the source image's.
    struct Rectified {
        let image: GrayImage
        let toSource: Homography
        let dimension: Int

        /// Whether a code zbar found here at `points` (this image's pixels) is the one the finders
        /// belong to, rather than a neighbour that came into the picture: it fills the square.
        func isTheCandidate(_ points: [(x: Int, y: Int)]) -> Bool {
            guard !points.isEmpty else { return false }
            let d = Double(dimension)
            let xs = points.map { Double($0.x) / FinderLocator.modulePixels - 4 }, ys = points.map { Double($0.y) / FinderLocator.modulePixels - 4 }
            return xs.min()! > -3 && ys.min()! > -3 && xs.max()! < d + 3 && ys.max()! < d + 3
                && xs.max()! - xs.min()! > d * 0.6 && ys.max()! - ys.min()! > d * 0.6
        }
    }

    // MARK: Finder patterns

    /// Finder pattern centres in a binarised image (0 = dark), seen in at least `minimumCount` rows.
    static func finders(in bin: GrayImage, rowStep: Int = 1, minimumCount: Int = 2) -> [Finder] {
        var found: [Finder] = []
        let w = bin.width, h = bin.height
        bin.pixels.withUnsafeBufferPointer { px in
            var runs: [Int] = []  // run lengths of one row, starting with a light run (maybe empty)
            runs.reserveCapacity(w / 2)
            var y = 0
            while y < h {
                runs.removeAll(keepingCapacity: true)
                let row = y * w
                var dark = false
                var length = 0
                for x in 0..<w {
                    let d = px[row + x] < 128
                    if d == dark {
                        length += 1
                    } else {
                        runs.append(length)
                        dark = d
                        length = 1
                    }
                }
                runs.append(length)
                // runs[i] is dark for odd i. A pattern starts at an odd index.
                var end = 0  // x after runs[0..<i]
                var i = 0
                while i + 4 < runs.count {
                    if i % 2 == 1, matches(runs[i], runs[i + 1], runs[i + 2], runs[i + 3], runs[i + 4]) {
                        let start = end
                        let centreX = Double(start + runs[i] + runs[i + 1]) + Double(runs[i + 2]) / 2
                        let total = runs[i...(i + 4)].reduce(0, +)
                        if let f = confirm(px, w, h, centreX: centreX, y: y, horizontalTotal: total) { merge(f, into: &found) }
                    }
                    end += runs[i]
                    i += 1
                }
                y += rowStep
            }
        }
        return found.filter { $0.count >= minimumCount }
    }

    /// The 1:1:3:1:1 test, with each run within half a module (the centre within 1.5).
    @inline(__always)
    static func matches(_ a: Int, _ b: Int, _ c: Int, _ d: Int, _ e: Int) -> Bool {
        let total = a + b + c + d + e
        guard total >= 7, a > 0, b > 0, c > 0, d > 0, e > 0 else { return false }
        let m = Double(total) / 7, v = m / 2
        return abs(m - Double(a)) < v && abs(m - Double(b)) < v && abs(3 * m - Double(c)) < 3 * v
            && abs(m - Double(d)) < v && abs(m - Double(e)) < v
    }

    /// The five runs through (x, y) along direction (dx, dy), and the offset of the centre run's
    /// middle from (x, y) in steps; nil when (x, y) is not dark or the runs run off the image.
    static func runs(_ px: UnsafeBufferPointer<UInt8>, _ w: Int, _ h: Int, x: Int, y: Int, dx: Int, dy: Int,
                     limit: Int) -> (counts: [Int], centre: Double)? {
        func dark(_ k: Int) -> Bool? {
            let xx = x + k * dx, yy = y + k * dy
            guard xx >= 0, yy >= 0, xx < w, yy < h else { return nil }
            return px[yy * w + xx] < 128
        }
        guard dark(0) == true else { return nil }
        // Backwards: centre dark, light, dark; forwards the same.
        var back = [0, 0, 0], fwd = [0, 0, 0]
        var k = 0
        for (state, wantDark) in [(0, true), (1, false), (2, true)] {
            while let d = dark(k), d == wantDark, back[state] <= limit { back[state] += 1; k -= 1 }
            if back[state] == 0 || back[state] > limit { return nil }
        }
        k = 1
        for (state, wantDark) in [(0, true), (1, false), (2, true)] {
            while let d = dark(k), d == wantDark, fwd[state] <= limit { fwd[state] += 1; k += 1 }
            if (state > 0 && fwd[state] == 0) || fwd[state] > limit { return nil }
        }
        let centreRun = back[0] + fwd[0]
        let counts = [back[2], back[1], centreRun, fwd[1], fwd[2]]
        // Centre of the middle run, relative to step 0: it spans -(back0-1) ... fwd0.
        let centre = Double(fwd[0] - back[0] + 1) / 2
        return (counts, centre)
    }

    static func confirm(_ px: UnsafeBufferPointer<UInt8>, _ w: Int, _ h: Int, centreX: Double, y: Int,
                        horizontalTotal: Int) -> Finder? {
        let limit = horizontalTotal * 2
        let cx = Int(centreX)
        guard let v = runs(px, w, h, x: cx, y: y, dx: 0, dy: 1, limit: limit),
              matches(v.counts[0], v.counts[1], v.counts[2], v.counts[3], v.counts[4]) else { return nil }
        let vTotal = v.counts.reduce(0, +)
        // Perspective stretches one direction against the other: up to twice.
        guard vTotal * 2 > horizontalTotal, vTotal < horizontalTotal * 2 else { return nil }
        let cy = Double(y) + v.centre
        guard let hz = runs(px, w, h, x: cx, y: Int(cy), dx: 1, dy: 0, limit: limit),
              matches(hz.counts[0], hz.counts[1], hz.counts[2], hz.counts[3], hz.counts[4]) else { return nil }
        let x = Double(cx) + hz.centre
        // One diagonal, leniently: a corner of text or a checkerboard fails it.
        guard let dg = runs(px, w, h, x: Int(x), y: Int(cy), dx: 1, dy: 1, limit: limit) else { return nil }
        let dTotal = dg.counts.reduce(0, +)
        guard dg.counts.allSatisfy({ $0 > 0 }), Double(dTotal) < Double(horizontalTotal + vTotal) * 1.2,
              Double(dg.counts[2]) > Double(dTotal) / 7 * 1.5 else { return nil }
        let hTotal = hz.counts.reduce(0, +)
        return Finder(x: x + 0.5, y: cy + 0.5, module: Double(hTotal + vTotal) / 14, count: 1)
    }

    static func merge(_ f: Finder, into found: inout [Finder]) {
        for i in found.indices {
            let g = found[i]
            if abs(g.x - f.x) <= g.module * 1.5, abs(g.y - f.y) <= g.module * 1.5, abs(g.module - f.module) <= max(1, g.module / 2) {
                let n = Double(g.count)
                found[i] = Finder(x: (g.x * n + f.x) / (n + 1), y: (g.y * n + f.y) / (n + 1),
                                  module: (g.module * n + f.module) / (n + 1), count: g.count + 1)
                return
            }
        }
        found.append(f)
    }

    // MARK: Grouping

    /// Plausible triples, best first. Finders beyond the `limit` most-seen are ignored.
    static func triples(_ all: [Finder], limit: Int = 40) -> [Triple] {
        let fs = Array(all.sorted { $0.count > $1.count }.prefix(limit))
        var out: [Triple] = []
        guard fs.count >= 3 else { return out }
        func dist(_ a: Finder, _ b: Finder) -> Double { ((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)).squareRoot() }
        for i in 0..<fs.count {
            for j in (i + 1)..<fs.count {
                for k in (j + 1)..<fs.count {
                    let ms = [fs[i].module, fs[j].module, fs[k].module]
                    guard ms.max()! / ms.min()! < 4 else { continue }
                    // The corner opposite the longest side is the top-left.
                    let ij = dist(fs[i], fs[j]), jk = dist(fs[j], fs[k]), ik = dist(fs[i], fs[k])
                    var (b, a, c) = (j, i, k)
                    if ij >= jk && ij >= ik { (b, a, c) = (k, i, j) } else if ik >= ij && ik >= jk { (b, a, c) = (j, i, k) } else { (b, a, c) = (i, j, k) }
                    let tl = fs[b]
                    var tr = fs[a], bl = fs[c]
                    let ax = tr.x - tl.x, ay = tr.y - tl.y, cxv = bl.x - tl.x, cyv = bl.y - tl.y
                    if ax * cyv - ay * cxv < 0 { swap(&tr, &bl) }
                    let la = dist(tl, tr), lc = dist(tl, bl)
                    guard max(la, lc) / min(la, lc) < 2.5 else { continue }
                    let cosine = abs(ax * cxv + ay * cyv) / (la * lc)
                    guard cosine < 0.8 else { continue }
                    // The legs in modules agree even where perspective makes them differ in pixels.
                    let top = la / ((tl.module + tr.module) / 2), left = lc / ((tl.module + bl.module) / 2)
                    guard top >= 10, left >= 10, max(top, left) / min(top, left) < 1.6 else { continue }
                    var dimension = Int(((top + left) / 2).rounded()) + 7
                    switch dimension % 4 {
                    case 0: dimension += 1
                    case 2: dimension -= 1
                    case 3: dimension += 2
                    default: break
                    }
                    guard (21...177).contains(dimension) else { continue }
                    let sizeSpread = (ms.max()! - ms.min()!) / ms.min()!
                    // Finders seen in few rows are more often patches of data than a code's own.
                    let rows = Double(min(fs[i].count, fs[j].count, fs[k].count))
                    let score = cosine + sizeSpread / 4 + abs(top - left) / max(top, left) + 2 / rows
                    out.append(Triple(topLeft: tl, topRight: tr, bottomLeft: bl, indices: [i, j, k], dimension: dimension, score: score))
                }
            }
        }
        return out.sorted { $0.score < $1.score }
    }

    // MARK: Alignment pattern

    /// The alignment pattern's centre near (ex, ey): a dark module in a light ring, each about a
    /// module wide, confirmed along its row and column; nil when none is within `radius`.
    static func alignment(in bin: GrayImage, near ex: Double, _ ey: Double, module m: Double, radius: Double) -> (x: Double, y: Double)? {
        let w = bin.width, h = bin.height
        let x0 = max(0, Int(ex - radius)), x1 = min(w - 1, Int(ex + radius))
        let y0 = max(0, Int(ey - radius)), y1 = min(h - 1, Int(ey + radius))
        guard x1 > x0 + 3, y1 > y0 + 3 else { return nil }
        var best: (x: Double, y: Double, d: Double)?
        func near(_ n: Int) -> Bool { Double(n) > m * 0.4 && Double(n) < m * 1.8 }
        bin.pixels.withUnsafeBufferPointer { px in
            func dark(_ x: Int, _ y: Int) -> Bool { px[y * w + x] < 128 }
            for y in y0...y1 {
                var x = x0
                while x <= x1 {
                    guard dark(x, y) else { x += 1; continue }
                    var e = x
                    while e + 1 <= x1, dark(e + 1, y) { e += 1 }
                    let run = e - x + 1
                    if near(run) {
                        var l = x - 1, r = e + 1
                        while l >= 0, !dark(l, y) { l -= 1 }
                        while r < w, !dark(r, y) { r += 1 }
                        let cx = (x + e) / 2
                        if near(x - 1 - l), near(r - e - 1) {
                            var t = y, b = y
                            while t - 1 >= 0, dark(cx, t - 1) { t -= 1 }
                            while b + 1 < h, dark(cx, b + 1) { b += 1 }
                            var tt = t - 1, bb = b + 1
                            while tt >= 0, !dark(cx, tt) { tt -= 1 }
                            while bb < h, !dark(cx, bb) { bb += 1 }
                            if near(b - t + 1), near(t - 1 - tt), near(bb - b - 1) {
                                let px = Double(x + e + 1) / 2, py = Double(t + b + 1) / 2
                                let d = (px - ex) * (px - ex) + (py - ey) * (py - ey)
                                if best == nil || d < best!.d { best = (px, py, d) }
                            }
                        }
                    }
                    x = e + 1
                }
            }
        }
        return best.map { ($0.x, $0.y) }
    }

    // MARK: Straightening

    /// The outer corners of a finder's 7x7 square, ordered as its module corners (0,0), (7,0),
    /// (0,7), (7,7) are along the code's axes `u` (top edge) and `v` (left edge): rays from
    /// the centre cross the dark centre, the light ring and the dark ring, and the ring's edge
    /// points farthest along each diagonal are the corners.
    static func corners(of f: Finder, u: (Double, Double), v: (Double, Double), bin: GrayImage) -> [(Double, Double)]? {
        let w = bin.width, h = bin.height
        let reach = f.module * 7
        var edge: [(Double, Double)] = []
        bin.pixels.withUnsafeBufferPointer { px in
            for k in 0..<72 {
                let a = Double(k) * .pi / 36
                let dx = cos(a), dy = sin(a)
                var state = 0
                var t = 0.0
                while t < reach {
                    let x = Int(f.x + dx * t), y = Int(f.y + dy * t)
                    guard x >= 0, y >= 0, x < w, y < h else { break }
                    let dark = px[y * w + x] < 128
                    if state == 0 && !dark { state = 1 } else if state == 1 && dark { state = 2 } else if state == 2 && !dark {
                        edge.append((f.x + dx * (t - 0.25), f.y + dy * (t - 0.25)))
                        break
                    }
                    t += 0.5
                }
            }
        }
        guard edge.count >= 54 else { return nil }
        return [(-1.0, -1.0), (1, -1), (-1, 1), (1, 1)].map { su, sv in
            let dx = su * u.0 + sv * v.0, dy = su * u.1 + sv * v.1
            return edge.max { ($0.0 - f.x) * dx + ($0.1 - f.y) * dy < ($1.0 - f.x) * dx + ($1.1 - f.y) * dy }!
        }
    }

    /// Module-to-image maps for one triple, most likely first: fitted to the finders' corners and
    /// centres at the estimated side and its neighbours (the one fitting best first), with the
    /// alignment pattern when it is where the fit puts it; the parallelogram map last.
    static func maps(_ t: Triple, bin: GrayImage) -> [(dimension: Int, map: Homography)] {
        let tl = t.topLeft, tr = t.topRight, bl = t.bottomLeft
        func unit(_ a: Finder, _ b: Finder) -> (Double, Double) {
            let dx = b.x - a.x, dy = b.y - a.y, n = (dx * dx + dy * dy).squareRoot()
            return (dx / n, dy / n)
        }
        let u = unit(tl, tr), v = unit(tl, bl)
        var out: [(dimension: Int, map: Homography)] = []
        if let c0 = corners(of: tl, u: u, v: v, bin: bin), let c1 = corners(of: tr, u: u, v: v, bin: bin),
           let c2 = corners(of: bl, u: u, v: v, bin: bin) {
            var fits: [(Int, Homography, Double)] = []
            // The finders' outer corners and centres, in modules and in pixels.
            func modules(_ d: Int) -> [(Double, Double)] {
                let s = Double(d)
                return [(0, 0), (7, 0), (0, 7), (7, 7), (s - 7, 0), (s, 0), (s - 7, 7), (s, 7),
                        (0, s - 7), (7, s - 7), (0, s), (7, s), (3.5, 3.5), (s - 3.5, 3.5), (3.5, s - 3.5)]
            }
            let pixels = c0 + c1 + c2 + [(tl.x, tl.y), (tr.x, tr.y), (bl.x, bl.y)]
            for d in [t.dimension, t.dimension - 4, t.dimension + 4, t.dimension - 8, t.dimension + 8, t.dimension - 12, t.dimension + 12] where (21...177).contains(d) {
                if let h = Homography(fitting: modules(d), to: pixels) { fits.append((d, h, h.residual(modules(d), pixels))) }
            }
            for (d, h, _) in fits.sorted(by: { $0.2 < $1.2 }).prefix(3) {
                let s = Double(d)
                if d > 21 {
                    let (ex, ey) = h.apply(s - 6.5, s - 6.5)
                    let m = (tl.module + tr.module + bl.module) / 3
                    if let a = alignment(in: bin, near: ex, ey, module: m, radius: 3 * m) {
                        // The alignment pattern counts as four points: it is the only one near the
                        // corner the finders leave open.
                        let module = modules(d) + Array(repeating: (s - 6.5, s - 6.5), count: 4)
                        let image = pixels + Array(repeating: (a.x, a.y), count: 4)
                        if let ha = Homography(fitting: module, to: image) { out.append((d, ha)) }
                    }
                }
                out.append((d, h))
            }
        }
        let d = Double(t.dimension)
        let br = (tr.x - tl.x + bl.x, tr.y - tl.y + bl.y)
        if let h = Homography(from: [(3.5, 3.5), (d - 3.5, 3.5), (3.5, d - 3.5), (d - 3.5, d - 3.5)],
                              to: [(tl.x, tl.y), (tr.x, tr.y), (bl.x, bl.y), br]) {
            out.append((t.dimension, h))
        }
        return out
    }

    /// How well the two timing patterns (row and column 6 from the top-left finder) alternate dark
    /// and light through `map`: near 1 for a code at the right side, near 0.5 for finders of
    /// different codes, or of none.
    static func timing(_ bin: GrayImage, dimension: Int, map: Homography) -> Double {
        guard dimension > 17 else { return 0 }
        var agree = 0, total = 0
        // The first 20 modules from the top-left finder: far along a large code a small error
        // in the fit puts the samples out of step, though zbar still reads the straightened code.
        for k in 8...min(dimension - 9, 27) {
            for (mx, my) in [(Double(k) + 0.5, 6.5), (6.5, Double(k) + 0.5)] {
                let (x, y) = map.apply(mx, my)
                let xi = Int(x), yi = Int(y)
                guard xi >= 0, yi >= 0, xi < bin.width, yi < bin.height else { continue }
                total += 1
                if (bin.pixels[yi * bin.width + xi] < 128) == (k % 2 == 0) { agree += 1 }
            }
        }
        return total > 0 ? Double(agree) / Double(total) : 0
    }

    /// The code drawn upright through `toSource` (module to source pixel) at `modulePixels`
    /// per module with a 4-module quiet zone, and the map from its pixels back to the source's.
    static func rectify(_ gray: GrayImage, dimension: Int, toSource: Homography) -> Rectified {
        let s = modulePixels
        let side = Int((Double(dimension) + 8) * s)
        var out = [UInt8](repeating: 255, count: side * side)
        gray.pixels.withUnsafeBufferPointer { src in
            for v in 0..<side {
                let my = (Double(v) + 0.5) / s - 4
                for u in 0..<side {
                    let mx = (Double(u) + 0.5) / s - 4
                    let (sx, sy) = toSource.apply(mx, my)
                    out[v * side + u] = sample(src, gray.width, gray.height, sx - 0.5, sy - 0.5)
                }
            }
        }
        let scale = Homography(m: [1 / s, 0, -4, 0, 1 / s, -4, 0, 0, 1])
        return Rectified(image: GrayImage(width: side, height: side, pixels: out), toSource: toSource.after(scale), dimension: dimension)
    }

    /// The code redrawn from its module centres: each module dark where the picture at its centre
    /// through `toSource` is darker than the mean of the pixels within a module of it (a window
    /// that small follows blur and uneven ink better than the locator's binarisation), and the
    /// finder, separator, timing and alignment patterns drawn where the standard puts them. For
    /// codes zbar does not sample well when merely straightened: modules of a pixel or two, bold
    /// or dotted modules, blur. Same geometry as `rectify`; zbar's Reed-Solomon check still
    /// decides what is read.
    static func grid(_ gray: GrayImage, dimension d: Int, toSource: Homography) -> Rectified {
        var centre = [Double](repeating: 255, count: d * d), local = centre
        let w = gray.width, h = gray.height
        gray.pixels.withUnsafeBufferPointer { src in
            for my in 0..<d {
                for mx in 0..<d {
                    let (x, y) = toSource.apply(Double(mx) + 0.5, Double(my) + 0.5)
                    let (x1, y1) = toSource.apply(Double(mx) + 1.5, Double(my) + 1.5)
                    let r = max(1, Int(max(abs(x1 - x), abs(y1 - y)).rounded()))
                    let xi = Int(x.rounded(.down)), yi = Int(y.rounded(.down))
                    guard xi >= 0, yi >= 0, xi < w, yi < h else { continue }
                    var sum = 0, n = 0
                    for yy in max(0, yi - r)...min(h - 1, yi + r) {
                        for xx in max(0, xi - r)...min(w - 1, xi + r) { sum += Int(src[yy * w + xx]) }
                        n += min(w - 1, xi + r) - max(0, xi - r) + 1
                    }
                    centre[my * d + mx] = Double(sample(src, w, h, x - 0.5, y - 0.5))
                    local[my * d + mx] = Double(sum) / Double(n)
                }
            }
        }
        // Within a tenth of the code's contrast of its window's mean (a module among its own kind,
        // all dark or all light), a module goes by the code's middle grey instead.
        let sorted = centre.sorted()
        let low = sorted[sorted.count / 10], high = sorted[sorted.count * 9 / 10]
        let middle = (low + high) / 2, margin = (high - low) / 10
        let dark = (0..<(d * d)).map { i in
            abs(centre[i] - local[i]) > margin ? centre[i] < local[i] : centre[i] < middle
        }
        return redrawn(dark, dimension: d, toSource: toSource)
    }

    /// The same from the locator's binarised image: each module as the binarisation has it at its
    /// centre (which reads some codes the local window does not, and the other way round).
    static func grid(binarised bin: GrayImage, dimension d: Int, toSource: Homography) -> Rectified {
        var dark = [Bool](repeating: false, count: d * d)
        for my in 0..<d {
            for mx in 0..<d {
                let (x, y) = toSource.apply(Double(mx) + 0.5, Double(my) + 0.5)
                let xi = Int(x.rounded(.down)), yi = Int(y.rounded(.down))
                if xi >= 0, yi >= 0, xi < bin.width, yi < bin.height { dark[my * d + mx] = bin.pixels[yi * bin.width + xi] < 128 }
            }
        }
        return redrawn(dark, dimension: d, toSource: toSource)
    }

    /// Modules `dark` (row by row) with the function patterns drawn over them, at `modulePixels`
    /// per module inside a 4-module quiet zone.
    static func redrawn(_ sampled: [Bool], dimension d: Int, toSource: Homography) -> Rectified {
        var dark = sampled
        func set(_ x: Int, _ y: Int, _ v: Bool) { if x >= 0, y >= 0, x < d, y < d { dark[y * d + x] = v } }
        // Finders with their light separators.
        for (ox, oy) in [(0, 0), (d - 7, 0), (0, d - 7)] {
            for y in -1...7 {
                for x in -1...7 {
                    let ring = max(abs(x - 3), abs(y - 3))
                    set(ox + x, oy + y, ring != 2 && ring != 4)
                }
            }
        }
        for k in 8..<(d - 8) {
            set(k, 6, k % 2 == 0)
            set(6, k, k % 2 == 0)
        }
        let centres = alignmentCentres(dimension: d)
        for cy in centres {
            for cx in centres where !(cx == 6 && cy == 6) && !(cx == 6 && cy == d - 7) && !(cx == d - 7 && cy == 6) {
                for y in -2...2 { for x in -2...2 { set(cx + x, cy + y, max(abs(x), abs(y)) != 1) } }
            }
        }
        let s = Int(modulePixels)
        let side = (d + 8) * s
        var out = [UInt8](repeating: 255, count: side * side)
        for my in 0..<d {
            for mx in 0..<d where dark[my * d + mx] {
                for v in 0..<s {
                    let row = ((my + 4) * s + v) * side + (mx + 4) * s
                    for u in 0..<s { out[row + u] = 0 }
                }
            }
        }
        let scale = Homography(m: [1 / modulePixels, 0, -4, 0, 1 / modulePixels, -4, 0, 0, 1])
        return Rectified(image: GrayImage(width: side, height: side, pixels: out), toSource: toSource.after(scale), dimension: d)
    }

    /// Row and column indices of the alignment pattern centres of a code `dimension` modules wide
    /// (ISO/IEC 18004 annex E), empty for version 1.
    static func alignmentCentres(dimension d: Int) -> [Int] {
        let version = (d - 17) / 4
        guard version >= 2 else { return [] }
        let count = version / 7 + 2
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var out = [6]
        for i in 0..<(count - 1) { out.insert(d - 7 - i * step, at: 1) }
        return out
    }

    /// Bilinear sample; white outside the image.
    @inline(__always)
    static func sample(_ src: UnsafeBufferPointer<UInt8>, _ w: Int, _ h: Int, _ x: Double, _ y: Double) -> UInt8 {
        guard x >= 0, y >= 0, x < Double(w - 1), y < Double(h - 1) else { return 255 }
        let x0 = Int(x), y0 = Int(y)
        let fx = x - Double(x0), fy = y - Double(y0)
        let i = y0 * w + x0
        let top = Double(src[i]) * (1 - fx) + Double(src[i + 1]) * fx
        let bottom = Double(src[i + w]) * (1 - fx) + Double(src[i + w + 1]) * fx
        return UInt8(top * (1 - fy) + bottom * fy)
    }
}

/// A plane projective map, row-major 3x3.
struct Homography {
    let m: [Double]

    init(m: [Double]) { self.m = m }

    /// The map taking each `from` point to the `to` point at the same index (four each);
    /// nil when three of them are collinear.
    init?(from: [(Double, Double)], to: [(Double, Double)]) {
        // Solve the 8x8 system for h0...h7 (h8 = 1) by Gaussian elimination with pivoting.
        var a = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for i in 0..<4 {
            let (x, y) = from[i], (u, v) = to[i]
            a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y, u]
            a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y, v]
        }
        guard let h = Homography.solve(a) else { return nil }
        self = h
    }

    /// The least-squares map taking `from` to `to` (at least four pairs), solved on normalised
    /// coordinates; nil when the points are degenerate.
    init?(fitting from: [(Double, Double)], to: [(Double, Double)]) {
        func normaliser(_ p: [(Double, Double)]) -> Homography {
            let n = Double(p.count)
            let mx = p.reduce(0) { $0 + $1.0 } / n, my = p.reduce(0) { $0 + $1.1 } / n
            let spread = p.reduce(0) { $0 + (($1.0 - mx) * ($1.0 - mx) + ($1.1 - my) * ($1.1 - my)).squareRoot() } / n
            let k = spread > 0 ? 2.squareRoot() / spread : 1
            return Homography(m: [k, 0, -k * mx, 0, k, -k * my, 0, 0, 1])
        }
        let nf = normaliser(from), nt = normaliser(to)
        // Normal equations of the 2n x 8 system (h8 = 1).
        var ata = [[Double]](repeating: [Double](repeating: 0, count: 9), count: 8)
        for (f, t) in zip(from, to) {
            let (x, y) = nf.apply(f.0, f.1), (u, v) = nt.apply(t.0, t.1)
            for row in [[x, y, 1, 0, 0, 0, -u * x, -u * y, u], [0, 0, 0, x, y, 1, -v * x, -v * y, v]] {
                for i in 0..<8 { for j in 0..<9 { ata[i][j] += row[i] * row[j] } }
            }
        }
        guard let h = Homography.solve(ata) else { return nil }
        // Undo the normalisation: to = nt^-1 . h . nf
        let k = nt.m[0], ox = nt.m[2], oy = nt.m[5]
        let inverse = Homography(m: [1 / k, 0, -ox / k, 0, 1 / k, -oy / k, 0, 0, 1])
        self = inverse.after(h).after(nf)
    }

    /// Root-mean-square distance in pixels between the mapped `from` points and `to`.
    func residual(_ from: [(Double, Double)], _ to: [(Double, Double)]) -> Double {
        let sum = zip(from, to).reduce(0.0) { acc, p in
            let (x, y) = apply(p.0.0, p.0.1)
            return acc + (x - p.1.0) * (x - p.1.0) + (y - p.1.1) * (y - p.1.1)
        }
        return (sum / Double(from.count)).squareRoot()
    }

    /// Gaussian elimination with partial pivoting of an 8x9 augmented system; h8 = 1.
    static func solve(_ system: [[Double]]) -> Homography? {
        var a = system
        for col in 0..<8 {
            let pivot = (col..<8).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            guard abs(a[pivot][col]) > 1e-12 else { return nil }
            a.swapAt(col, pivot)
            for r in 0..<8 where r != col {
                let f = a[r][col] / a[col][col]
                if f != 0 { for c in col..<9 { a[r][c] -= f * a[col][c] } }
            }
        }
        return Homography(m: (0..<8).map { a[$0][8] / a[$0][$0] } + [1])
    }

    @inline(__always)
    func apply(_ x: Double, _ y: Double) -> (Double, Double) {
        let w = m[6] * x + m[7] * y + m[8]
        return ((m[0] * x + m[1] * y + m[2]) / w, (m[3] * x + m[4] * y + m[5]) / w)
    }

    /// self ∘ other: first `other`, then `self`.
    func after(_ o: Homography) -> Homography {
        var r = [Double](repeating: 0, count: 9)
        for i in 0..<3 { for j in 0..<3 { r[i * 3 + j] = (0..<3).reduce(0) { $0 + m[i * 3 + $1] * o.m[$1 * 3 + j] } } }
        return Homography(m: r)
    }
}
