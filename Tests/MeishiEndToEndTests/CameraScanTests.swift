import Foundation
import Testing
import MeishiKit
import MeishiQR
@testable import meishi

/// A camera for tests: delivers its frames one per call, then ends.
final class FrameSequence: FrameSource, @unchecked Sendable {
    private var frames: [GrayImage]
    init(_ frames: [GrayImage]) { self.frames = frames }
    func nextFrame() throws(CameraError) -> GrayImage? { frames.isEmpty ? nil : frames.removeFirst() }
}

/// 640x480 frames as a laptop camera sees a phone held up to it: a code sharp, blurred, moving,
/// partly out of view, or nothing at all.
enum SyntheticFrames {
    static let width = 640, height = 480

    static func code(_ text: String, mode: QREncoder.Mode) throws -> GrayImage {
        QRRender.grayImage(try QREncoder.encode(text, mode: mode, correction: .M), scale: 3)
    }

    /// An unevenly lit background with no code.
    static var empty: GrayImage {
        GrayImage(width: width, height: height, pixels: (0..<(width * height)).map { UInt8(120 + ($0 % width) / 10 + ($0 / width) / 16) })
    }

    /// `code` with its top-left corner at (x, y); whatever falls outside the frame is lost.
    static func placed(_ code: GrayImage, x: Int, y: Int) -> GrayImage {
        var frame = empty
        for cy in 0..<code.height where (0..<height).contains(y + cy) {
            for cx in 0..<code.width where (0..<width).contains(x + cx) {
                frame.pixels[(y + cy) * width + x + cx] = code.pixels[cy * code.width + cx]
            }
        }
        return frame
    }

    /// Out of focus: a 3x3 box blur applied `times` times.
    static func blurred(_ frame: GrayImage, times: Int) -> GrayImage {
        (0..<times).reduce(frame) { image, _ in ImageOps.boxBlur(image) }
    }

    /// Moving sideways while the shutter is open: the average of the code at `sweep` positions.
    static func moving(_ code: GrayImage, x: Int, y: Int, sweep: Int) -> GrayImage {
        var sum = [Int](repeating: 0, count: width * height)
        for dx in 0..<sweep {
            for (i, p) in placed(code, x: x + dx, y: y).pixels.enumerated() { sum[i] += Int(p) }
        }
        return GrayImage(width: width, height: height, pixels: sum.map { UInt8($0 / sweep) })
    }
}

@Suite struct CameraScanTests {
    /// Mei's signed card as QR text, and Ken's home to scan it into.
    static func people() async throws -> (ken: InProcess, card: String) {
        let mei = InProcess()
        #expect(await mei("init").status == 0)
        #expect(await mei("card", "set", "name", "Mei Tanaka").status == 0)
        let text = await mei("card", "qr", "--format", "text")
        #expect(text.status == 0, "\(text.err)")
        let ken = InProcess()
        #expect(await ken("init").status == 0)
        return (ken, text.out.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static let vcard = "BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Ken Sato\r\nEMAIL:ken@example.org\r\nEND:VCARD\r\n"

    /// Frames before the card is readable: nothing, out of focus, moving, half out of view, then
    /// a vCard someone else holds up.
    static func approach(_ card: String) throws -> [GrayImage] {
        let code = try SyntheticFrames.code(card, mode: .alphanumeric)
        return [
            SyntheticFrames.empty,
            SyntheticFrames.blurred(SyntheticFrames.placed(code, x: 120, y: 60), times: 6),
            SyntheticFrames.moving(code, x: 100, y: 60, sweep: 24),
            SyntheticFrames.placed(code, x: -code.width / 2, y: 60),
            SyntheticFrames.placed(try SyntheticFrames.code(vcard, mode: .utf8), x: 200, y: 100),
        ]
    }

    static func run(_ p: InProcess, _ args: [String], frames: [GrayImage], clock: (@Sendable () -> Date)? = nil,
                    opened: Recorder? = nil) async -> (status: Int32, out: String, err: String) {
        p.recorder.reset()
        var ctx = p.context
        ctx.openCamera = { device in
            opened?.appendOut(Array(device.utf8))
            return FrameSequence(frames)
        }
        if let clock { ctx.clock = clock }
        let status = await Meishi.run(arguments: args, in: ctx)
        return (status, p.recorder.stdout, p.recorder.stderr)
    }

    @Test func storesTheFirstCardInViewAfterBlurredMovingAndCutOffFrames() async throws {
        let (ken, card) = try await Self.people()
        let code = try SyntheticFrames.code(card, mode: .alphanumeric)
        let frames = try Self.approach(card) + [SyntheticFrames.placed(code, x: 150, y: 70), SyntheticFrames.empty]
        let opened = Recorder()
        let r = await Self.run(ken, ["scan", "--camera"], frames: frames, opened: opened)
        #expect(r.status == 0, "\(r.err)")
        #expect(opened.stdout == "/dev/video0")
        #expect(r.err.contains("reading /dev/video0: hold the QR code up to the camera (--timeout 60s)"))
        #expect(r.err.contains("passing over a vcard code (--import takes it); waiting for a card"))
        #expect(r.err.contains("read a meishi-card code in frame 6"))
        #expect(r.out.contains("added Mei Tanaka as #1 (signed)"), "\(r.out)")
        #expect(await ken("contacts", "list").out.contains("Mei Tanaka"))
        // The same card again: stored once, reported unchanged.
        let again = await Self.run(ken, ["scan", "--camera", "/dev/video2", "--json"], frames: [SyntheticFrames.placed(code, x: 10, y: 10)],
                                   opened: opened)
        #expect(again.status == 0)
        #expect(again.out.contains("\"file\": \"/dev/video2\""))
        #expect(again.out.contains("\"verdict\": \"valid\""))
    }

    @Test func importTakesTheVCardAndRawTakesAnyCode() async throws {
        let (ken, card) = try await Self.people()
        let imported = await Self.run(ken, ["scan", "--camera", "--import"], frames: try Self.approach(card))
        #expect(imported.status == 0, "\(imported.err)")
        #expect(imported.err.contains("read a vcard code in frame 5"))
        #expect(imported.out.contains("Ken Sato"))
        let text = try SyntheticFrames.code("https://example.org/\u{1B}[2J", mode: .utf8)
        let raw = await Self.run(ken, ["scan", "--camera", "--raw"], frames: [SyntheticFrames.placed(text, x: 30, y: 40)])
        #expect(raw.status == 0)
        #expect(raw.out == "https://example.org/\\u{1B}[2J\n")
    }

    @Test func aCameraThatStopsOrATimeoutIsAnError() async throws {
        let (ken, card) = try await Self.people()
        let stopped = await Self.run(ken, ["scan", "--camera"], frames: Array(try Self.approach(card).prefix(4)))
        #expect(stopped.status == 69)
        #expect(stopped.err.hasSuffix("meishi: error: the camera /dev/video0 stopped before a card came into view\n"))
        // A clock that moves 1 s per reading: the 5 s timeout passes while frames keep coming.
        final class Ticks: @unchecked Sendable { var n = 0.0 }
        let ticks = Ticks(), start = ken.now
        let timedOut = await Self.run(ken, ["scan", "--camera", "--timeout", "5s"], frames: Array(repeating: SyntheticFrames.empty, count: 50),
                                      clock: { ticks.n += 1; return start.addingTimeInterval(ticks.n) })
        #expect(timedOut.status == 75)
        #expect(timedOut.err.contains("meishi: error: no card came into view of /dev/video0 within 5 s\n"))
        #expect(await ken("contacts", "list", "--json").out.contains("[]"))
    }

    @Test func missingDevicesAndBadArgumentsHaveTheirOwnErrors() async throws {
        let ken = InProcess()
        #expect(await ken("init").status == 0)
        // The real camera path (libzbar): no device here, and a file that is not a V4L2 device.
        let none = await ken("scan", "--camera", "/dev/meishi-no-such-camera")
        #expect(none.status == 66)
        #expect(none.err.hasPrefix("meishi: error: no camera at /dev/meishi-no-such-camera\nmeishi: hint: "))
        let file = Fixtures.temporaryDirectory() + "/not-a-camera"
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        // A regular file and /dev/null are refused before libzbar (and libv4l2, which would print
        // to the terminal) open them.
        for path in [file, "/dev/null"] {
            let notCamera = await ken("scan", "--camera", path)
            #expect(notCamera.status == 66)
            #expect(notCamera.err.hasPrefix("meishi: error: \(path) is not a video device\nmeishi: hint: name a camera"), "\(notCamera.err)")
        }
        #expect(throws: CameraError.notAVideoDevice) { try ZBarCamera(device: "/dev/null") }
        // A V4L2 device node (major 81) with no driver behind it reaches libzbar, which cannot
        // open it: its reason is passed on. Making the node needs root (CI runs as root).
        let node = Fixtures.temporaryDirectory() + "/video-nothing"
        if getuid() == 0, mknod(node, S_IFCHR | 0o600, (81 << 8) | 250) == 0 {
            let unusable = await ken("scan", "--camera", node)
            #expect(unusable.status == 69)
            #expect(unusable.err.hasPrefix("meishi: error: cannot read frames from the camera \(node): "), "\(unusable.err)")
        } else {
            print("skipped: making a V4L2 device node needs root (CI runs as root)")
        }
        #expect(throws: CameraError.noDevice) { try ZBarCamera(device: "/dev/meishi-no-such-camera") }
        var denied = ken.context
        denied.openCamera = { device throws(MeishiError) in throw .camera(device: device, .noPermission) }
        ken.recorder.reset()
        #expect(await Meishi.run(arguments: ["scan", "--camera"], in: denied) == 77)
        #expect(ken.recorder.stderr.hasPrefix("meishi: error: no permission to open the camera /dev/video0\n"))
        #expect(await ken("scan", "--camera", "/dev/video0", "/dev/video1").status == 64)
        #expect(await ken("scan").status == 64)
    }
}
