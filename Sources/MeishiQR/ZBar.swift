internal import CZBar

/// The libzbar wrapper: one scan of one grayscale image, QR codes only, in binary mode.
enum ZBar {
    /// `density` n reads every n-th row and column (1: all of them; 2 costs half).
    static func scan(_ image: GrayImage, density: Int32 = 1) -> [(bytes: [UInt8], points: [(x: Int, y: Int)])] {
        guard let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        // Binary: zbar returns the bytes as stored, instead of guessing a charset and converting.
        zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_TEST_INVERTED, 1)
        if density != 1 {
            zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_X_DENSITY, density)
            zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_Y_DENSITY, density)
        }
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
