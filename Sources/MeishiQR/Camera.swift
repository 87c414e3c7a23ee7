internal import CZBar
import Foundation

/// Why a camera could not be used. Cases carry no paths.
public enum CameraError: Error, Equatable, Sendable {
    /// Nothing at the device path.
    case noDevice
    /// The device exists but this user may not open it (not in the `video` group?).
    case noPermission
    /// The path is not a video device (a regular file, /dev/null): not opened, so libv4l2 has no
    /// chance to print to the terminal.
    case notAVideoDevice
    /// The device opened but does not deliver frames; the text is libzbar's or the system's.
    case unusable(String)
    /// The source delivered its last frame.
    case ended
}

/// A sequence of grayscale frames: a camera, or a list of images in tests.
public protocol FrameSource: AnyObject {
    /// The next frame, waiting for it if need be; nil when the source has no more.
    func nextFrame() throws(CameraError) -> GrayImage?
}

/// Frames from a V4L2 camera through libzbar's video support (zbar_video): libzbar opens the
/// device, negotiates a format and maps the buffers; each frame is converted to 8-bit gray.
/// Untested on a real device on the machines meishi is developed on (they have no camera).
public final class ZBarCamera: FrameSource {
    private let video: OpaquePointer

    /// Opens `device` (e.g. /dev/video0) and starts streaming.
    public init(device: String) throws(CameraError) {
        // Tell the two common failures apart before libzbar turns them into one message.
        if access(device, F_OK) != 0 { throw .noDevice }
        guard Self.isVideoDevice(device) else { throw .notAVideoDevice }
        if access(device, R_OK | W_OK) != 0 {
            throw errno == EACCES || errno == EPERM ? .noPermission : .unusable(String(cString: strerror(errno)))
        }
        guard let v = zbar_video_create() else { throw .unusable("out of memory") }
        func failure() -> CameraError {
            let text = ZBarCamera.reason(zbar_video_error_string(v, 0))
            zbar_video_destroy(v)
            return .unusable(text)
        }
        guard zbar_video_open(v, device) == 0 else { throw failure() }
        // No window: libzbar picks a format it can convert to gray itself.
        guard zbar_negotiate_format(v, nil) == 0 else { throw failure() }
        guard zbar_video_enable(v, 1) == 0 else { throw failure() }
        video = v
    }

    /// Whether `path` is a character device of Video4Linux (major number 81), following links.
    static func isVideoDevice(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFCHR else { return false }
        let dev = UInt64(st.st_rdev)
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff)  // glibc's gnu_dev_major
        return major == 81
    }

    /// libzbar's error text without its banner: "ERROR: zbar video in _zbar_video_open():\n
    /// system error: opening video device '/dev/video0': ..." becomes the second line.
    static func reason(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        let lines = String(cString: text).split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return lines.filter { !$0.isEmpty && !$0.hasPrefix("ERROR:") }.joined(separator: "; ")
    }

    deinit {
        zbar_video_enable(video, 0)
        zbar_video_destroy(video)
    }

    public func nextFrame() throws(CameraError) -> GrayImage? {
        guard let frame = zbar_video_next_image(video) else {
            throw .unusable(ZBarCamera.reason(zbar_video_error_string(video, 0)))
        }
        defer { zbar_image_destroy(frame) }
        let y800: UInt = 0x30303859  // fourcc "Y800"
        guard let gray = zbar_image_convert(frame, y800) else { throw .unusable("cannot convert the camera's format to gray") }
        defer { zbar_image_destroy(gray) }
        let w = Int(zbar_image_get_width(gray)), h = Int(zbar_image_get_height(gray))
        guard w > 0, h > 0, Int(zbar_image_get_data_length(gray)) >= w * h,
              let data = zbar_image_get_data(gray) else { throw .unusable("empty frame") }
        let bytes = data.assumingMemoryBound(to: UInt8.self)
        return GrayImage(width: w, height: h, pixels: Array(UnsafeBufferPointer(start: bytes, count: w * h)))
    }
}
