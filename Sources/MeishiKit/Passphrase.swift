import Foundation
import MeishiCrypto

/// Passphrases from `MEISHI_PASSPHRASE`, else from the controlling terminal without echo.
public struct TerminalPassphrases: PassphraseSource {
    public let environment: [String: String]

    public init(environment: [String: String]) { self.environment = environment }

    public func passphrase(prompt: String) -> SecureBytes? {
        if let p = environment["MEISHI_PASSPHRASE"] { return SecureBytes(copying: Array(p.utf8)) }
        return Self.readHidden(prompt: prompt)
    }

    public func newPassphrase() throws(MeishiFailure) -> SecureBytes? {
        if let p = environment["MEISHI_PASSPHRASE"] {
            guard !p.isEmpty else { throw MeishiFailure("MEISHI_PASSPHRASE is empty", status: .usage) }
            return SecureBytes(copying: Array(p.utf8))
        }
        guard let first = Self.readHidden(prompt: "new passphrase: ") else { return nil }
        guard first.count > 0 else { throw MeishiFailure("the passphrase is empty", status: .usage) }
        guard let second = Self.readHidden(prompt: "repeat passphrase: ") else { return nil }
        guard first == second else { throw MeishiFailure("the passphrases do not match", status: .usage) }
        return first
    }

    /// Reads one line from /dev/tty with echo off; nil when there is no terminal.
    static func readHidden(prompt: String) -> SecureBytes? {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard isatty(fd) == 1 else { return nil }
        var old = termios()
        guard tcgetattr(fd, &old) == 0 else { return nil }
        var quiet = old
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        _ = prompt.withCString { Glibc.write(fd, $0, strlen($0)) }
        tcsetattr(fd, TCSAFLUSH, &quiet)
        defer { tcsetattr(fd, TCSAFLUSH, &old) }
        var line: [UInt8] = []
        defer { wipe(&line) }
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != 0x0A, byte != 0x0D {
            line.append(byte)
            if line.count > 1024 { break }
        }
        return SecureBytes(copying: line)
    }
}
