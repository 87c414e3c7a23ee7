import Foundation

/// The directory that holds one person's identity, card and contacts.
public struct Home: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `flag` if given, else `$MEISHI_HOME`, else `$XDG_DATA_HOME/meishi`, else
    /// `~/.local/share/meishi`; relative paths are taken from `workingDirectory`.
    public static func resolve(flag: String?, environment: [String: String], workingDirectory: String) throws(MeishiError) -> Home {
        func absolute(_ p: String) -> String { p.hasPrefix("/") ? p : workingDirectory + "/" + p }
        if let flag, !flag.isEmpty { return Home(path: absolute(flag)) }
        if let env = environment["MEISHI_HOME"], !env.isEmpty { return Home(path: absolute(env)) }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return Home(path: xdg + "/meishi") }
        guard let user = environment["HOME"], !user.isEmpty else { throw .noHome }
        return Home(path: user + "/.local/share/meishi")
    }

    public var secretKeyPath: String { path + "/identity.key" }
    public var publicIdentityPath: String { path + "/identity.json" }
    public var cardPath: String { path + "/card.json" }
    public var databasePath: String { path + "/meishi.sqlite" }
    /// The lock file of `exclusively`; it holds nothing.
    public var lockPath: String { path + "/home.lock" }

    /// Whether `path` is one of this home's own files (keys, card, store and its journal), by
    /// device and inode, so another spelling or a hard link is caught too: no `-o` may replace them.
    public func owns(_ file: String) -> Bool {
        var target = stat()
        guard stat(file, &target) == 0 else { return false }
        let own = [secretKeyPath, publicIdentityPath, solidarityKeyPath, cardPath, databasePath,
                   databasePath + "-wal", databasePath + "-shm"]
        return own.contains { p in
            var o = stat()
            return stat(p, &o) == 0 && o.st_dev == target.st_dev && o.st_ino == target.st_ino
        }
    }

    /// Refuses a home someone else could have changed, as ssh does with `~/.ssh`: one owned by
    /// another user, or writable by group or others (a card.json replaced there would be shown
    /// and signed as ours). A home that does not exist yet passes (it is created 0700).
    public func checkOwnership(user: uid_t = geteuid()) throws(MeishiError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { return }
        if (st.st_mode & S_IFMT) == S_IFLNK {
            // A link is judged by what it points to, and by who could change the link itself.
            guard st.st_uid == user else { throw .homeNotOwned(path: path, owner: st.st_uid) }
            guard stat(path, &st) == 0 else { return }
        }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .homeNotDirectory(path: path) }
        guard st.st_uid == user else { throw .homeNotOwned(path: path, owner: st.st_uid) }
        guard st.st_mode & 0o022 == 0 else { throw .homeWritableByOthers(path: path, mode: UInt32(st.st_mode & 0o777)) }
    }

    /// Creates the home (and missing parents) with mode 0700; tightens an existing one.
    public func ensureExists() throws(MeishiError) {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir) {
            guard isDir.boolValue else { throw .homeNotDirectory(path: path) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .cannotCreateHome(path: path, reason: (error as NSError).localizedFailureReason ?? error.localizedDescription)
            }
        }
        if let mode = SecureFile.mode(of: path), mode & 0o077 != 0 { chmod(path, 0o700) }
    }

    /// Runs `body` holding the home's exclusive lock, so that commands which read, change and
    /// write back `card.json` or the key files run one after the other instead of each writing
    /// back what it read and undoing the other's change (five `card add` at once kept one
    /// email). The lock is an `flock` on `home.lock`, as the store's migration lock is (not a
    /// POSIX lock, which a process loses when it closes any descriptor of the file); it is
    /// released when the descriptor closes, by the kernel too if the process dies.
    public func exclusively<T>(_ body: () throws -> T) throws -> T {
        try ensureExists()
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw MeishiError.cannotWrite(path: lockPath, reason: SecureFile.lastError()) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw MeishiError.cannotWrite(path: lockPath, reason: SecureFile.lastError()) }
        }
        return try body()
    }
}
