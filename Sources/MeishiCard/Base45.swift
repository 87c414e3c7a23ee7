/// Base45 (RFC 9285): bytes as characters of the QR alphanumeric set, so a QR code can hold
/// them in alphanumeric mode (5.5 bits per character) and every decoder returns them unchanged.
public enum Base45 {
    public static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".utf8)
    private static let reverse: [Int] = {
        var r = [Int](repeating: -1, count: 256)
        for (n, c) in alphabet.enumerated() { r[Int(c)] = n }
        return r
    }()

    public static func encode<D: Collection>(_ data: D) -> String where D.Element == UInt8 {
        let bytes = Array(data)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count / 2 * 3 + 2)
        var i = 0
        while i + 1 < bytes.count {
            var n = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            out.append(alphabet[n % 45]); n /= 45
            out.append(alphabet[n % 45]); n /= 45
            out.append(alphabet[n])
            i += 2
        }
        if i < bytes.count {
            let n = Int(bytes[i])
            out.append(alphabet[n % 45])
            out.append(alphabet[n / 45])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil for a foreign character, an impossible length or an out-of-range group.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 3 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 3 * 2 + 1)
        var i = 0
        while i < chars.count {
            let take = min(3, chars.count - i)
            var n = 0
            var factor = 1
            for j in 0..<take {
                let v = reverse[Int(chars[i + j])]
                guard v >= 0 else { return nil }
                n += v * factor
                factor *= 45
            }
            if take == 3 {
                guard n <= 0xFFFF else { return nil }
                out.append(UInt8(n >> 8))
                out.append(UInt8(n & 0xFF))
            } else {
                guard n <= 0xFF else { return nil }
                out.append(UInt8(n))
            }
            i += take
        }
        return out
    }
}
