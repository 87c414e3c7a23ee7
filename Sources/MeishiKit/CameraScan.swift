import MeishiCard
import MeishiQR

/// `scan --camera`: frames from a camera (or any ``FrameSource``) are scanned one after another
/// until one holds a code the caller waits for.
public enum CameraScan {
    /// Scanning time per frame: a camera delivers another one soon, so no frame gets the full
    /// budget a still image gets.
    public static let frameBudget = Duration.milliseconds(120)

    /// Opens a V4L2 camera through libzbar.
    public static func open(_ device: String) throws(MeishiError) -> any FrameSource {
        do { return try ZBarCamera(device: device) } catch { throw .camera(device: device, error) }
    }

    /// Reads frames from `source` until a code that `wanted` accepts is in one; each other code is
    /// passed to `passing` once. Throws `.noCardSeen` when `expired` says so between frames and
    /// `.camera(device, .ended)` when the source ends first.
    public static func firstCode(from source: any FrameSource, device: String, verifier: CardVerifier, timeoutSeconds: Int,
                                 expired: () -> Bool, wanted: (ScannedCode) -> Bool,
                                 passing: (ScannedCode) -> Void) throws(MeishiError) -> (code: ScannedCode, frames: Int) {
        var seen = Set<[UInt8]>()
        var frames = 0
        while !expired() {
            let frame: GrayImage?
            do { frame = try source.nextFrame() } catch { throw .camera(device: device, error) }
            guard let frame else { throw .camera(device: device, .ended) }
            frames += 1
            for found in QRScanner.scan(frame, budget: frameBudget) {
                let code = QRService.classified(found, verifier: verifier)
                if wanted(code) { return (code, frames) }
                if seen.insert(found.bytes).inserted { passing(code) }
            }
        }
        throw .noCardSeen(device: device, seconds: timeoutSeconds)
    }
}
