import Foundation

/// Turning bytes from a QR code or a file into text.
public enum TextDecoding {
    /// UTF-8 when the bytes are valid UTF-8, else Shift_JIS when they decode as such, else Latin-1.
    public static func decode(_ bytes: [UInt8], charset: String? = nil) -> String {
        if let cs = charset?.uppercased() {
            if cs.contains("SHIFT") || cs == "SJIS" || cs == "CP932", let s = String(data: Data(bytes), encoding: .shiftJIS) { return s }
            if cs.contains("8859-1") || cs == "LATIN1" { return String(bytes.map { Character(Unicode.Scalar($0)) }) }
        }
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        if looksLikeShiftJIS(bytes), let s = String(data: Data(bytes), encoding: .shiftJIS) { return s }
        return String(bytes.map { Character(Unicode.Scalar($0)) })
    }

    /// Whether the bytes should be read as Shift_JIS rather than Latin-1: well-formed Shift_JIS
    /// with at least one double-byte character, or a run of three half-width katakana. Latin-1
    /// text such as "Köln" is often well-formed Shift_JIS too, but only by accident (zxing's rule).
    public static func looksLikeShiftJIS(_ bytes: [UInt8]) -> Bool {
        var i = 0, doubleBytes = 0, run = 0, longestRun = 0
        while i < bytes.count {
            let b = bytes[i]
            switch b {
            case 0x00..<0x80:
                run = 0
                i += 1
            case 0xA1...0xDF:
                run += 1
                longestRun = max(longestRun, run)
                i += 1
            case 0x81...0x9F, 0xE0...0xEF:
                guard i + 1 < bytes.count, (0x40...0xFC).contains(bytes[i + 1]), bytes[i + 1] != 0x7F else { return false }
                doubleBytes += 1
                run = 0
                i += 2
            default:
                return false
            }
        }
        return doubleBytes > 0 || longestRun >= 3
    }

    /// What `scan --raw` prints for a code: its text when the bytes are UTF-8 or Shift_JIS, else
    /// the bytes unchanged (binary content).
    public static func rawOutput(_ bytes: [UInt8]) -> [UInt8] {
        if String(validating: bytes, as: UTF8.self) != nil { return bytes }
        if looksLikeShiftJIS(bytes), let s = String(data: Data(bytes), encoding: .shiftJIS) { return Array(s.utf8) }
        return bytes
    }
}
