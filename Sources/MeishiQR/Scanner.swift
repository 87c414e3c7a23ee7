import Foundation

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

/// Finds QR codes with libzbar, on the image as it is and on transformed copies: codes located
/// by their finder patterns, dark or light, then straightened and redrawn from their module
/// centres (``FinderLocator``), on a mean-window threshold and, where that leaves a code unread,
/// on a per-block threshold at two block sizes, then the full-resolution photo and locally
/// binarised, smoothed and upscaled copies. Passes run until every located code is read or the
/// time budget is spent; where the locator sees nothing finder-like, the scan ends after zbar's
/// first look (on a photo, one at every second line, then the locator's look on a threshold per
/// block of a few pixels, for small blurred codes). Every code is reported once.
public enum QRScanner {
    /// Longest side zbar sees in the first pass; larger images are area-downscaled first.
    static let firstPassSide = 1600
    /// Processor time after which no further copy is scanned (a pass under way finishes; the
    /// first pass and the locator always run, and so does a large photo's full-resolution pass
    /// when the locator found a code it could not read). Counted
    /// on this thread's CPU clock, so a busy machine slows a scan down but does not change what
    /// it finds.
    public static let defaultBudget = Duration.milliseconds(100)
    /// Pixels of the first pass's copy above which an image counts as a photo, where the locator
    /// looks before zbar does.
    static let photoPixels = 1_000_000
    /// Longest side of a first pass's copy small enough for the locator to look again at twice
    /// the size when nothing was read.
    static let smallSide = 400
    /// Most triples straightened although no map of theirs alternates, per image.
    static let maximumGuesses = 4
    /// Most straightened candidates tried per image.
    static let maximumCandidates = 48
    /// Share of timing-pattern modules that must alternate (or, a module out of step, must all
    /// be the wrong way round) before a candidate goes to zbar.
    static let minimumTiming = 0.7

    public static func scan(_ image: GrayImage, budget: Duration = defaultBudget) -> [FoundCode] {
        let deadline = CPUDeadline(after: budget)
        var found: [FoundCode] = []
        func add(_ bytes: [UInt8], _ points: [(x: Int, y: Int)], _ pass: String) {
            guard !found.contains(where: { $0.bytes == bytes }) else { return }
            found.append(FoundCode(bytes: bytes, points: points, pass: pass))
        }
        let all = passes(for: image)
        var located: Located?
        func locateOnce() -> Located {
            if let located { return located }
            let l = locate(all[0], known: found.map { $0.points }, deadline: deadline, add: add)
            located = l
            return l
        }
        // A photo: the locator, cheaper than zbar on it, looks first. Where it sees nothing like a
        // finder pattern, in either polarity, zbar gets one look at every second line and no
        // other pass runs: a photo without a code costs little.
        if let (first, factor) = all[0].1(), first.width * first.height > photoPixels, locateOnce().seen == 0 {
            for code in ZBar.scan(first, density: 2) {
                add(code.bytes, code.points.map { (Int(Double($0.x) * factor), Int(Double($0.y) * factor)) }, "first")
            }
            // A small code under blur (modules of two or three pixels on a card seen from afar):
            // the mean window, a sixteenth of the picture, averages its finders' rings away, and
            // a threshold per block of a few pixels still sees them.
            if found.isEmpty, !deadline.passed {
                _ = locate(all[0], binarise: { ImageOps.binariseBlocks($0, block: fineBlock(all[0])) }, deadline: deadline, add: add)
            }
            return found
        }
        // A photo where the mean window saw a finder or two but no three that make a code: the
        // same finer look, before zbar's look at every line spends the budget.
        if let (first, _) = all[0].1(), first.width * first.height > photoPixels, locateOnce().triples == 0 {
            _ = locate(all[0], binarise: { ImageOps.binariseBlocks($0, block: fineBlock(all[0])) }, deadline: deadline, add: add)
        }
        // The image as it is first: most pictures are read here.
        for (index, (name, make)) in all.enumerated() {
            if index > 0 {
                let l = locateOnce()
                // One code and no other located: done. Several codes: a crowd, where the other
                // passes may find more, as long as the budget lasts.
                if found.count == 1 && l.unread == 0 { break }
                // Nothing read and nothing finder-like in either polarity: the copies below read
                // no such image on the bench's sets; an image without a code ends here.
                if found.isEmpty && l.seen == 0 { break }
                // A small picture where nothing was read: the locator again at twice the size, where
                // a finder squeezed into a few rows by perspective spans enough of them, then with a
                // binarisation window twice as wide, so that a code filling the picture keeps the
                // dark centres of its finders.
                if index == 1, found.isEmpty, let (base, factor) = all[0].1(), max(base.width, base.height) <= smallSide {
                    let upscaled = ImageOps.upscaleBilinear(base)
                    for divisor in [16, 8] where found.isEmpty {
                        _ = locate(("upscaled", { (upscaled, factor / 2) }), windowDivisor: divisor, deadline: deadline, add: add)
                    }
                    if !found.isEmpty { break }
                }
                // Finders the mean window lost (uneven light, a dark card, modules of a few pixels
                // beside large ones) or codes it located but could not read: the locator again on
                // a threshold per block, at two block sizes.
                if index == 1, l.seen > 0, found.isEmpty || l.unread > 0, !deadline.passed {
                    let before = found.count
                    for block in blockSizes(all[0]) where found.count == before && !deadline.passed {
                        _ = locate(all[0], known: found.map { $0.points }, binarise: { ImageOps.binariseBlocks($0, block: block) },
                                   deadline: deadline, add: add)
                    }
                    if found.count > before && l.unread <= found.count - before { break }
                }
                // Past the budget, only a large photo holding a code the locator found but could
                // not read still gets its full-resolution look.
                if deadline.passed && !(name == "full-resolution" && l.unread > 0) { break }
            }
            guard let (candidate, factor) = make() else { continue }
            for code in ZBar.scan(candidate) {
                add(code.bytes, code.points.map { (Int(Double($0.x) * factor), Int(Double($0.y) * factor)) }, name)
            }
        }
        return found
    }

    /// What the locator saw: finder-like patterns of either polarity (`seen`, each confirmed
    /// across and down but perhaps in a single row), and codes it located but could not read.
    struct Located {
        var seen = 0
        var unread = 0
        /// Triples of finders that make a plausible code, in either polarity.
        var triples = 0
    }

    /// The finder-pattern pass on the first pass's image, dark codes on light and light on dark.
    /// `unread` counts candidates whose timing patterns alternate and that share no finder with
    /// a code that was read, nor with each other.
    /// Triples whose three centres lie within a code already read (`known`, corners in the
    /// source image's pixels) count as read without being straightened again.
    /// `windowDivisor` sets the binarisation's window (the shorter side over it); `binarise`, when
    /// given, thresholds instead (``ImageOps/binariseBlocks(_:block:flatRange:)``).
    static func locate(_ first: Pass, known: [[(x: Int, y: Int)]] = [], windowDivisor: Int = 16,
                       binarise: ((GrayImage) -> GrayImage)? = nil, deadline: CPUDeadline,
                       add: ([UInt8], [(x: Int, y: Int)], String) -> Void) -> Located {
        guard let (gray, factor) = first.1() else { return Located() }
        var located = Located()
        let readAreas = known.filter { $0.count >= 3 }.map { $0.map { (x: Double($0.x) / factor, y: Double($0.y) / factor) } }
        let bin = binarise?(gray) ?? ImageOps.binarise(gray, windowDivisor: windowDivisor)
        let inverted = GrayImage(width: bin.width, height: bin.height, pixels: bin.pixels.map { 255 &- $0 })
        var tried = 0
        let seen = [bin, inverted].map { FinderLocator.finders(in: $0, minimumCount: 1) }
        located.seen = seen[0].count + seen[1].count
        var readCodes = 0, guesses = 0
        for (bin, light) in [(bin, false), (inverted, true)] {
            // Light codes among dark ones are rare: once a dark code is read here, the light
            // pass would only find the dark codes again in the rectified neighbourhoods.
            if light && readCodes > 0 { break }
            let all = seen[light ? 1 : 0]
            let triples = FinderLocator.triples(all.filter { $0.count >= 2 })
            located.triples += triples.count
            guard !triples.isEmpty else { continue }
            // Light codes are straightened from the inverted picture: dark on light, as zbar likes.
            let source = light ? GrayImage(width: gray.width, height: gray.height, pixels: gray.pixels.map { 255 &- $0 }) : gray
            var used = Set<Int>()
            var failed: [FinderLocator.Triple] = []
            for t in triples where used.isDisjoint(with: t.indices) {
                if readAreas.contains(where: { area in [t.topLeft, t.topRight, t.bottomLeft].allSatisfy { inside(area, $0.x, $0.y) } }) {
                    used.formUnion(t.indices)
                    readCodes += 1
                    continue
                }
                guard tried < maximumCandidates, !deadline.passed else { failed.append(t); continue }
                tried += 1
                var read = false
                // The maps whose timing patterns alternate, best first: finders of different codes,
                // or of none, stop here without a zbar call.
                let all = FinderLocator.maps(t, bin: bin)
                let maps = all.map { ($0.dimension, $0.map, FinderLocator.timing(bin, dimension: $0.dimension, map: $0.map)) }
                    .filter { abs($0.2 - 0.5) >= minimumTiming - 0.5 }.sorted { abs($0.2 - 0.5) > abs($1.2 - 0.5) }
                // Each map straightened as it is, then redrawn from its module centres. When no map
                // alternates (blur, or a strong shear that puts the finders' corners off), the
                // likeliest map and the parallelogram through the three centres are still
                // straightened, while no code has been read here: zbar's own finder often reads
                // the code from there. (In a crowd, finders of different codes make such triples.)
                var tries = Array(maps.prefix(3))
                if maps.isEmpty && readCodes == 0 && guesses < maximumGuesses {
                    guesses += 1
                    tries = (all.count > 1 ? [all[0], all[all.count - 1]] : all).map { ($0.dimension, $0.map, 0.0) }
                }
                candidates: for (dimension, map, _) in tries {
                    let straightened = { FinderLocator.rectify(source, dimension: dimension, toSource: map) }
                    let redrawn = maps.isEmpty ? [] : [{ FinderLocator.grid(source, dimension: dimension, toSource: map) },
                                                       { FinderLocator.grid(binarised: bin, dimension: dimension, toSource: map) }]
                    for make in [straightened] + redrawn {
                        let r = make()
                        let codes = ZBar.scan(r.image)
                        for code in codes {
                            let points = code.points.map { p in
                                let (x, y) = r.toSource.apply(Double(p.x) + 0.5, Double(p.y) + 0.5)
                                return (x: Int(x * factor), y: Int(y * factor))
                            }
                            add(code.bytes, points, "finders")
                        }
                        if codes.contains(where: { r.isTheCandidate($0.points) }) { read = true; break candidates }
                    }
                }
                if read { used.formUnion(t.indices); readCodes += 1 } else if !maps.isEmpty { failed.append(t) }
            }
            for t in failed where used.isDisjoint(with: t.indices) {
                used.formUnion(t.indices)
                located.unread += 1
            }
        }
        return located
    }

    /// Block sizes of the per-block threshold for the first pass's image: a block of about a
    /// two-hundredth of the longer side (modules of a few pixels stay inside a neighbourhood that
    /// holds both colours), then four times that (a large code's finder centre in one block).
    static func blockSizes(_ first: Pass) -> [Int] {
        guard let (gray, _) = first.1() else { return [] }
        let small = max(4, max(gray.width, gray.height) / 200)
        return [small, small * 4]
    }

    /// Block size of the per-block threshold for small codes: half the smaller of `blockSizes`,
    /// a four-hundredth of the longer side (4 pixels on the first pass of a photo).
    static func fineBlock(_ first: Pass) -> Int {
        max(2, (blockSizes(first).first ?? 4) / 2)
    }

    /// Whether (x, y) lies inside the convex polygon `corners` (either winding).
    static func inside(_ corners: [(x: Double, y: Double)], _ x: Double, _ y: Double) -> Bool {
        var sign = 0.0
        for i in corners.indices {
            let a = corners[i], b = corners[(i + 1) % corners.count]
            let cross = (b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x)
            if cross * sign < 0 { return false }
            if cross != 0 { sign = cross }
        }
        return true
    }

    typealias Pass = (String, () -> (GrayImage, Double)?)

    /// The passes in the order of what the bench found them to read (`make bench-qr`): zbar on
    /// the image, then the finder-pattern locator (run from `scan`), then the copies that still
    /// read codes the first two miss (binarised 11 on the bench's sets, smoothed+binarised 4,
    /// upscaled+binarised 3). Passes that found nothing the others missed on ../shared/corpus/qr
    /// were dropped: padded, padded+upscaled, sharpened, half, half+binarised, quarter and
    /// contrast-stretched. The corpus holds few large photos, so full-resolution stays for
    /// those: a phone photo of a dense code is read there. Transformations work on a copy at
    /// most `firstPassSide` long.
    static func passes(for image: GrayImage) -> [Pass] {
        let longest = max(image.width, image.height)
        let f = longest > firstPassSide ? Double(longest) / Double(firstPassSide) : 1
        let base = f > 1 ? ImageOps.downscale(image, by: f) : image
        let side = max(base.width, base.height)
        var out: [Pass] = [("first", { (base, f) })]
        // Photos larger than the first pass's copy: small modules may only survive at full size.
        if f > 1 { out.append(("full-resolution", { (image, 1) })) }
        out.append(("binarised", { (ImageOps.binarise(base), f) }))
        out.append(("smoothed+binarised", { (ImageOps.binarise(ImageOps.boxBlur(base)), f) }))
        if side < 800 {
            out.append(("upscaled+binarised", { (ImageOps.binarise(ImageOps.upscale(base, by: 2)), f / 2) }))
        }
        return out
    }
}

/// A budget of this thread's processor time (CLOCK_THREAD_CPUTIME_ID).
struct CPUDeadline {
    let end: UInt64

    init(after budget: Duration) {
        let (seconds, attoseconds) = budget.components
        end = CPUDeadline.now + UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    var passed: Bool { CPUDeadline.now >= end }

    static var now: UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }
}

