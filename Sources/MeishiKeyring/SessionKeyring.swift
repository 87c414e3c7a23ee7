internal import CKeyutils
import Glibc
import MeishiCrypto

/// Keys kept by the Linux kernel in the caller's session keyring (keyrings(7)), through
/// libkeyutils: `meishi`'s passphrase agent. A key is a `user` key readable only by its possessor
/// (a process of this session) — no other user, and no process of this user outside the session
/// — and expires on its own after the timeout it was given. Nothing is written to disk.
public enum SessionKeyring {
    /// Why the keyring is not usable.
    public enum Failure: Error, Equatable, Sendable {
        /// This process has no session keyring, or the kernel (or a seccomp filter) refuses keyctl.
        case unavailable(errno: Int32)
        /// The kernel refused to add or change a key (quota, permissions).
        case refused(errno: Int32)
    }

    /// Description prefix of every key meishi adds, so `removeAll` finds only its own.
    public static let prefix = "meishi:"

    private static let possessorOnly: key_perm_t =
        UInt32(KEY_POS_VIEW | KEY_POS_READ | KEY_POS_WRITE | KEY_POS_SEARCH | KEY_POS_LINK | KEY_POS_SETATTR) | UInt32(KEY_USR_VIEW)

    /// The session keyring's serial; `.unavailable` when there is none (create is not asked for:
    /// a keyring made here would end with this process).
    public static func sessionKeyring() throws(Failure) -> Int32 {
        let id = keyctl_get_keyring_ID(KEY_SPEC_SESSION_KEYRING, 0)
        guard id > 0 else { throw .unavailable(errno: errno) }
        return id
    }

    /// Adds (or replaces) the key `name` (after `prefix`) holding `secret`, expiring after
    /// `seconds`; returns its serial.
    @discardableResult
    public static func store(_ secret: SecureBytes, name: String, seconds: UInt32) throws(Failure) -> Int32 {
        precondition(seconds > 0, "a remembered key must expire")
        let ring = try sessionKeyring()
        let description = prefix + name
        let serial = secret.withUnsafeBytes { bytes in
            add_key("user", description, bytes.baseAddress, bytes.count, ring)
        }
        guard serial > 0 else { throw .refused(errno: errno) }
        // Permissions first, then the timeout: a key is never left without either for long.
        guard keyctl_setperm(serial, possessorOnly) == 0, keyctl_set_timeout(serial, seconds) == 0 else {
            let e = errno
            _ = keyctl_unlink(serial, ring)
            throw .refused(errno: e)
        }
        return serial
    }

    /// The secret of key `name`, or nil when there is none (never stored, expired, removed).
    public static func read(name: String) -> SecureBytes? {
        serial(name: name).flatMap(read(serial:))
    }

    /// The serial of key `name`, or nil.
    public static func serial(name: String) -> Int32? {
        guard let ring = try? sessionKeyring() else { return nil }
        let serial = keyctl_search(ring, "user", prefix + name, 0)
        return serial > 0 ? Int32(truncatingIfNeeded: serial) : nil
    }

    /// The payload of the key with this serial, or nil when it cannot be read.
    public static func read(serial: Int32) -> SecureBytes? {
        var buffer: UnsafeMutableRawPointer?
        let n = keyctl_read_alloc(serial, &buffer)
        guard n >= 0, let buffer else { return nil }
        defer {
            explicit_bzero(buffer, Int(n))
            free(buffer)
        }
        return SecureBytes(copying: UnsafeRawBufferPointer(start: buffer, count: Int(n)))
    }

    /// Removes the key `name`; whether there was one.
    @discardableResult
    public static func remove(name: String) -> Bool {
        guard let ring = try? sessionKeyring(), let serial = serial(name: name) else { return false }
        return keyctl_invalidate(serial) == 0 || keyctl_unlink(serial, ring) == 0
    }

    /// Removes every key meishi added to the session keyring; how many.
    public static func removeAll() -> Int {
        guard let ring = try? sessionKeyring() else { return 0 }
        var buffer: UnsafeMutableRawPointer?
        let n = keyctl_read_alloc(ring, &buffer)
        guard n >= 0, let buffer else { return 0 }
        defer { free(buffer) }
        let serials = Array(UnsafeBufferPointer(start: buffer.assumingMemoryBound(to: key_serial_t.self), count: Int(n) / MemoryLayout<key_serial_t>.size))
        var removed = 0
        for serial in serials {
            var text: UnsafeMutablePointer<CChar>?
            guard keyctl_describe_alloc(serial, &text) >= 0, let text else { continue }
            // "type;uid;gid;perm;description"
            let description = String(cString: text).split(separator: ";", maxSplits: 4, omittingEmptySubsequences: false)
            free(text)
            guard description.count == 5, description[0] == "user", description[4].hasPrefix(prefix) else { continue }
            if keyctl_invalidate(serial) == 0 || keyctl_unlink(serial, ring) == 0 { removed += 1 }
        }
        return removed
    }
}
