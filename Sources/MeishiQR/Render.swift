internal import CPNG

/// Drawing a QR matrix for people and for files. Pictures have the standard's 4-module quiet
/// zone; a terminal has 2 (its own colours, so white on any theme), which phone cameras and zbar
/// read (QREndToEndTests.terminalQROnADarkThemeScans) and which lets a typical card's code fit
/// a 100x35 terminal.
public enum QRRender {
    public static let quietZone = 4
    public static let terminalQuietZone = 2

    /// Unicode half blocks, two module rows per text line, with explicit black-on-white colours
    /// (ANSI 256-colour 16 and 231) so the code scans on dark terminal themes too.
    /// `inverted` draws light modules on dark instead.
    /// With `colours` false (NO_COLOR, or not a terminal) no escape sequence is written: the
    /// half blocks draw the dark modules, which suits dark text on a light background, and with
    /// `inverted` the light ones, for light text on a dark background.
    public static func terminal(_ m: QRMatrix, inverted: Bool = false, colours: Bool = true) -> String {
        let q = terminalQuietZone
        let span = m.size + 2 * q
        let start = colours ? (inverted ? "\u{1B}[38;5;231;48;5;16m" : "\u{1B}[38;5;16;48;5;231m") : ""
        let end = colours ? "\u{1B}[0m\n" : "\n"
        // Coloured, the foreground is the dark colour (light when inverted); plain, the drawn
        // blocks are the terminal's text colour, so inverting swaps which modules are drawn.
        let drawLight = !colours && inverted
        var out = ""
        var y = 0
        while y < span {
            out += start
            for x in 0..<span {
                let top = m[x - q, y - q] != drawLight
                let bottom = y + 1 < span ? m[x - q, y + 1 - q] != drawLight : false
                switch (top, bottom) {
                case (true, true): out += "█"
                case (true, false): out += "▀"
                case (false, true): out += "▄"
                case (false, false): out += " "
                }
            }
            out += end
            y += 2
        }
        return out
    }

    /// Width in terminal columns of `terminal(m)`.
    public static func terminalColumns(_ m: QRMatrix) -> Int { m.size + 2 * terminalQuietZone }

    /// An SVG document, `scale` user units per module, dark modules as one path.
    public static func svg(_ m: QRMatrix, scale: Int) -> String {
        let span = m.size + 2 * quietZone
        var path = ""
        for y in 0..<m.size {
            var x = 0
            while x < m.size {
                guard m[x, y] else { x += 1; continue }
                var run = 1
                while x + run < m.size, m[x + run, y] { run += 1 }
                path += "M\(x + quietZone) \(y + quietZone)h\(run)v1h-\(run)z"
                x += run
            }
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="\(span * scale)" height="\(span * scale)" \
            viewBox="0 0 \(span) \(span)" shape-rendering="crispEdges">
            <rect width="\(span)" height="\(span)" fill="#ffffff"/>
            <path d="\(path)" fill="#000000"/>
            </svg>

            """
    }

    /// An 8-bit grayscale image of the code, `scale` pixels per module.
    public static func grayImage(_ m: QRMatrix, scale: Int) -> GrayImage {
        let span = (m.size + 2 * quietZone) * scale
        var pixels = [UInt8](repeating: 255, count: span * span)
        for y in 0..<m.size {
            for x in 0..<m.size where m[x, y] {
                for dy in 0..<scale {
                    let row = ((y + quietZone) * scale + dy) * span + (x + quietZone) * scale
                    for dx in 0..<scale { pixels[row + dx] = 0 }
                }
            }
        }
        return GrayImage(width: span, height: span, pixels: pixels)
    }

    /// A grayscale PNG (libpng's simplified write API, which reports errors instead of jumping).
    public static func png(_ m: QRMatrix, scale: Int) throws(QRError) -> [UInt8] {
        try PNGCodec.encode(grayImage(m, scale: scale))
    }
}
