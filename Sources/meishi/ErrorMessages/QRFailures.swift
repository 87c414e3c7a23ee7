import MeishiCard
import MeishiKit
import MeishiQR

/// Images and QR codes: reading them (`scan`, `scan --camera`) and writing them.
extension MeishiFailure {
    /// An image or QR failure.
    init(_ e: QRError) {
        switch e {
        case .contentTooLarge(let n):
            self.init("the card (\(n) characters) does not fit in a QR code at this error-correction level",
                      hint: "share fewer fields with --fields, or use --ecc L", status: .dataError)
        case .notAnImage: self.init("not an image meishi can read: it reads PNG, JPEG, WebP, PGM and PPM", hint: MeishiFailure.otherImageFormat,
                                    status: .dataError)
        case .tooManyPixels(let w, let h, let limit):
            self.init("image is \(w)x\(h) pixels, more than the \(limit / 1_000_000)-megapixel limit", hint: "shrink the image first",
                      status: .dataError)
        case .corruptImage(let why): self.init("corrupt or truncated image: \(why)", status: .dataError)
        case .tooCostly(let why):
            self.init("refusing to decode the image: \(why)", hint: "save it again as a PNG or a baseline (not progressive) JPEG",
                      status: .dataError)
        case .encoderFailed(let why): self.init("QR encoding failed: \(why)", status: .failure)
        }
    }

    /// A Solidarity code meishi names but cannot read (exit 65).
    init(_ kind: SolidarityQR.Unsupported) {
        switch kind {
        case .zkProof:
            self.init("a Solidarity zkProof envelope: it is encrypted for the sender's own devices, so no one else can read it",
                      hint: "ask them to show their card as a signed (didSigned) Solidarity QR", status: .dataError)
        case .chunk:
            self.init("one frame (sqc1) of a multi-part Solidarity QR: meishi reads Solidarity cards from a single code only",
                      hint: "ask them to show their card as a signed (didSigned) Solidarity QR", status: .dataError)
        case .openID:
            self.init("an OpenID for Verifiable Presentations request (openid4vp://): meishi does not present credentials",
                      hint: "use --raw to see the request", status: .dataError)
        }
    }

    /// `scan --camera` (`init(_: MeishiError)` routes them here).
    init(camera e: MeishiError) {
        switch e {
        case .camera(let device, .noDevice):
            self.init("no camera at \(device)", hint: "is it plugged in? name another device: meishi scan --camera "
                      + (device == "/dev/video1" ? "/dev/video0" : "/dev/video1"), status: .noInput)
        case .camera(let device, .noPermission):
            self.init("no permission to open the camera \(device)", hint: "add yourself to its group (usually 'video') and log in again",
                      status: .permission)
        case .camera(let device, .notAVideoDevice):
            self.init("\(device) is not a video device", hint: "name a camera, such as /dev/video0 ('ls /dev/video*' lists them)",
                      status: .noInput)
        case .camera(let device, .unusable(let why)):
            self.init("cannot read frames from the camera \(device): \(why)", hint: "is it a V4L2 camera, free of other programs?", status: .unavailable)
        case .camera(let device, .ended):
            self.init("the camera \(device) stopped before a card came into view", status: .unavailable)
        case .noCardSeen(let device, let seconds):
            self.init("no card came into view of \(device) within \(seconds) s", hint: "hold the code closer and steadier, or give more --timeout",
                      status: .timedOut)
        default: preconditionFailure("not a camera failure: \(e)")
        }
    }
}

/// `card qr` and `contacts share --qr`.
extension MeishiFailure {
    static func unknownQRExtension(_ path: String) -> MeishiFailure {
        MeishiFailure("cannot tell the QR format from \(path): meishi writes .png, .svg and .txt",
                      hint: "name the file card.png, card.svg or card.txt, or pass --format", status: .usage)
    }

    static func invertNeedsTerminal(_ format: String) -> MeishiFailure {
        MeishiFailure("--invert is for the terminal QR; a \(format) file is always dark on light",
                      hint: "leave out --invert", status: .usage)
    }

    static func qrTooLarge(characters: Int, correction: QRErrorCorrection) -> MeishiFailure {
        MeishiFailure("the card (\(characters) characters) does not fit in a QR code at ECC \(correction.rawValue)",
                      hint: correction == .L ? "share less: --level public, or fewer fields with --fields name,email"
                                             : "share less with --level public or --fields name,email, or use --ecc L",
                      status: .dataError)
    }

    /// How a share could be made smaller: nothing when it is public with chosen fields already.
    static func shareLess(level: DisclosureLevel, fieldsChosen: Bool) -> String? {
        level > .public ? "share less with --level public or --fields name,email"
            : fieldsChosen ? nil : "share fewer fields with --fields name,email"
    }

    /// `shareLess`: how the share could be smaller, if it can.
    /// `file`: the way to a file instead (a picture for `card qr`, the signed card for `contacts share`).
    static func qrDoesNotFit(version: Int, columns: Int, rows: Int, terminalColumns: Int, terminalRows: Int?,
                             shareLess: String?, file: String = "write a picture: -o card.png") -> MeishiFailure {
        MeishiFailure("the QR (version \(version)) needs \(columns)x\(rows) characters; this terminal has "
                      + "\(terminalColumns)x\(terminalRows.map(String.init) ?? "?"), and a code cut or wrapped does not scan",
                      hint: "enlarge the terminal (or a smaller font) to \(columns)x\(rows)"
                        + (shareLess.map { ", \($0)," } ?? ",")
                        + " or " + file,
                      status: .usage)
    }
}

extension MeishiFailure {
    /// The hint for a picture in a format `scan` does not read (HEIC, GIF, BMP, TIFF, AVIF…).
    static let otherImageFormat = "save it as PNG or JPEG first (a screenshot of it works too)"
}
