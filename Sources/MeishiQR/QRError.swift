/// Failures of QR encoding, image decoding and scanning. Cases carry no paths.
public enum QRError: Error, Equatable, Sendable {
    /// The content does not fit the largest QR code (version 40) at this error-correction level.
    case contentTooLarge(bytes: Int)
    /// The bytes are not an image format meishi reads (PNG, JPEG, PGM, PPM).
    case notAnImage
    /// The image is larger than the pixel limit; checked from the header, before decoding.
    case tooManyPixels(width: Int, height: Int, limit: Int)
    /// The image is truncated or corrupt; the text is the decoder's.
    case corruptImage(String)
    /// Decoding would cost too much (a JPEG of too many scans, or past the time limit); the text says which.
    case tooCostly(String)
    /// The encoder or writer failed for lack of memory or another internal reason.
    case encoderFailed(String)
}
