internal import CQREncode

/// A QR symbol as a square grid of modules (true = dark).
public struct QRMatrix: Equatable, Sendable {
    public let size: Int
    public let version: Int
    public let modules: [Bool]

    public subscript(x: Int, y: Int) -> Bool {
        guard x >= 0, y >= 0, x < size, y < size else { return false }
        return modules[y * size + x]
    }
}

/// Error-correction levels (ISO/IEC 18004): roughly 7, 15, 25 and 30 percent recovery.
public enum QRErrorCorrection: String, CaseIterable, Sendable {
    case L, M, Q, H

    var level: QRecLevel {
        switch self {
        case .L: QR_ECLEVEL_L
        case .M: QR_ECLEVEL_M
        case .Q: QR_ECLEVEL_Q
        case .H: QR_ECLEVEL_H
        }
    }
}

/// QR encoding through libqrencode.
public enum QREncoder {
    /// How the content goes into the symbol.
    public enum Mode: Sendable {
        /// Alphanumeric mode: only `0-9 A-Z space $ % * + - . / :` (e.g. Base45 text).
        case alphanumeric
        /// Byte mode preceded by ECI 26 (UTF-8), so decoders know the text is UTF-8.
        case utf8
    }

    /// The smallest QR symbol holding `text` at `correction`.
    public static func encode(_ text: String, mode: Mode, correction: QRErrorCorrection) throws(QRError) -> QRMatrix {
        let bytes = Array(text.utf8)
        guard let input = QRinput_new2(0, correction.level) else { throw .encoderFailed("out of memory") }
        defer { QRinput_free(input) }
        var status: Int32 = 0
        switch mode {
        case .alphanumeric:
            status = bytes.withUnsafeBufferPointer { QRinput_append(input, QR_MODE_AN, Int32($0.count), $0.baseAddress) }
        case .utf8:
            status = QRinput_appendECIheader(input, 26)
            if status == 0 {
                status = bytes.withUnsafeBufferPointer { QRinput_append(input, QR_MODE_8, Int32($0.count), $0.baseAddress) }
            }
        }
        guard status == 0 else { throw .encoderFailed("content not valid for the mode") }
        guard let code = QRcode_encodeInput(input) else {
            if errno == ERANGE { throw .contentTooLarge(bytes: bytes.count) }
            throw .encoderFailed("libqrencode could not encode the content")
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        // Bit 0 of each byte is the module colour; the other bits are libqrencode's bookkeeping.
        return QRMatrix(size: width, version: Int(code.pointee.version), modules: data.map { $0 & 1 == 1 })
    }
}

#if canImport(Glibc)
import Glibc
#endif
