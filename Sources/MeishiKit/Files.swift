import Foundation
import MeishiCrypto

/// File operations with the modes and atomicity meishi promises: files in the home are 0600,
/// written to a temporary name and renamed, so a failure never leaves half a file.
public enum SecureFile {
    /// Writes a command's output (`-o FILE`) atomically with mode `mode`, refusing the files of
    /// `home` itself (a card or export written over identity.key would lose the key for good).
    public static func writeOutput(_ data: [UInt8], to path: String, mode: mode_t, home: Home) throws(MeishiError) {
        if home.owns(path) { throw .cannotWrite(path: path, reason: "it is one of this meishi home's own files") }
        try write(data, to: path, mode: mode)
    }

    /// Writes `data` to `path` atomically with mode `mode`.
    public static func write(_ data: [UInt8], to path: String, mode: mode_t = 0o600) throws(MeishiError) {
        if isDirectory(path) { throw .cannotWrite(path: path, reason: "it is a directory") }
        let tmp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .cannotWrite(path: path, reason: lastError()) }
        var reason: String?
        if !writeAll(fd, data) || fsync(fd) != 0 || fchmod(fd, mode) != 0 { reason = lastError() }
        close(fd)
        if reason == nil, rename(tmp, path) != 0 { reason = lastError() }
        if let reason {
            unlink(tmp)
            throw .cannotWrite(path: path, reason: reason)
        }
    }

    /// Creates `path` with `data`, failing if it already exists (O_EXCL), mode 0600.
    public static func create(_ data: [UInt8], at path: String) throws(MeishiError) {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { throw .alreadyExists(path: path) }
            throw .cannotWrite(path: path, reason: lastError())
        }
        var reason: String?
        if !writeAll(fd, data) || fsync(fd) != 0 { reason = lastError() }
        close(fd)
        if let reason {
            unlink(path)
            throw .cannotWrite(path: path, reason: reason)
        }
    }

    private static func writeAll(_ fd: Int32, _ data: [UInt8]) -> Bool {
        var offset = 0
        while offset < data.count {
            let n = data[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    /// Reads at most `limit + 1` bytes of `path` ("-" is standard input), so a caller can tell
    /// an oversized input without reading all of it.
    public static func read(_ path: String, limit: Int) throws(MeishiError) -> [UInt8] {
        let fd: Int32
        if path == "-" {
            fd = dup(STDIN_FILENO)
        } else {
            var st = stat()
            guard stat(path, &st) == 0 else {
                let missing = errno == ENOENT
                throw .cannotRead(path: path, reason: lastError(), missing: missing)
            }
            guard (st.st_mode & S_IFMT) != S_IFDIR else { throw .isDirectory(path: path) }
            fd = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard fd >= 0 else { throw .cannotRead(path: path, reason: lastError(), missing: false) }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        defer { wipe(&buffer) }
        while out.count <= limit {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - out.count)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, reason: lastError(), missing: false)
            }
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    /// The permission bits of `path`, or nil when it does not exist.
    public static func mode(of path: String) -> mode_t? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return st.st_mode & 0o7777
    }

    public static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// `strerror(errno)`: call it right after the failing call, before anything that may set errno.
    static func lastError() -> String { String(cString: strerror(errno)) }
}
