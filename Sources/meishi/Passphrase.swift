import MeishiCrypto
import MeishiKit

/// Passphrases from `MEISHI_PASSPHRASE`, else from the terminal without echo.
struct TerminalPassphrases: PassphraseSource {
    let environment: [String: String]
    let terminal: TerminalIO

    func passphrase(forKeyAt path: String) -> SecureBytes? {
        if let p = environment["MEISHI_PASSPHRASE"] { return SecureBytes(copying: Array(p.utf8)) }
        return terminal.readHidden("passphrase for \(path): ")
    }

    func newPassphrase() throws(MeishiError) -> SecureBytes? {
        if let p = environment["MEISHI_PASSPHRASE"] {
            guard !p.isEmpty else { throw .emptyPassphrase }
            return SecureBytes(copying: Array(p.utf8))
        }
        guard let first = terminal.readHidden("new passphrase: ") else { return nil }
        guard first.count > 0 else { throw .emptyPassphrase }
        guard let second = terminal.readHidden("repeat passphrase: ") else { return nil }
        guard first == second else { throw .passphrasesDiffer }
        return first
    }
}
