import Foundation

/// File operations with the modes and atomicity meishi promises: files in the home are 0600,
/// written to a temporary name and renamed, so a failure never leaves half a file.
public enum SecureFile {
    /// Writes `data` to `path` atomically with mode `mode`.
    public static func write(_ data: [UInt8], to path: String, mode: mode_t = 0o600) throws(MeishiFailure) {
        let tmp = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode)
        guard fd >= 0 else { throw failure("cannot write \(path)") }
        var ok = writeAll(fd, data) && fsync(fd) == 0
        ok = (fchmod(fd, mode) == 0) && ok
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            let f = failure("cannot write \(path)")
            unlink(tmp)
            throw f
        }
    }

    /// Creates `path` with `data`, failing if it already exists (O_EXCL), mode 0600.
    public static func create(_ data: [UInt8], at path: String) throws(MeishiFailure) {
        let fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST {
                throw MeishiFailure("\(path) already exists", status: .failure)
            }
            throw failure("cannot create \(path)")
        }
        let ok = writeAll(fd, data) && fsync(fd) == 0
        close(fd)
        guard ok else {
            let f = failure("cannot write \(path)")
            unlink(path)
            throw f
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
    public static func read(_ path: String, limit: Int) throws(MeishiFailure) -> [UInt8] {
        let fd: Int32
        if path == "-" {
            fd = dup(STDIN_FILENO)
        } else {
            var st = stat()
            guard stat(path, &st) == 0 else {
                throw MeishiFailure("cannot read \(path): \(String(cString: strerror(errno)))",
                                    hint: errno == ENOENT ? "check the path" : nil, status: .noInput)
            }
            guard (st.st_mode & S_IFMT) != S_IFDIR else {
                throw MeishiFailure("cannot read \(path): it is a directory", status: .noInput)
            }
            fd = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard fd >= 0 else {
            throw MeishiFailure("cannot read \(path): \(String(cString: strerror(errno)))", status: .noInput)
        }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while out.count <= limit {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, min($0.count, limit + 1 - out.count)) }
            if n < 0 { if errno == EINTR { continue }; throw failure("cannot read \(path)", status: .noInput) }
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

    static func failure(_ what: String, status: ExitStatus = .failure) -> MeishiFailure {
        MeishiFailure("\(what): \(String(cString: strerror(errno)))", status: status)
    }
}
