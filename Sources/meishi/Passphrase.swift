import MeishiCrypto
import MeishiKit

/// Passphrases from `MEISHI_PASSPHRASE` (a new one from `MEISHI_NEW_PASSPHRASE` first), else from
/// the terminal without echo: three tries at a key, a warning for a short new one.
struct TerminalPassphrases: PassphraseSource {
    let environment: [String: String]
    let terminal: TerminalIO
    let console: Console
    /// What a new passphrase is for, in its prompt ("new passphrase: ").
    var newPrompt = "new passphrase"
    /// The agent: key-encryption keys of earlier unlocks in this session.
    var remembered: (any RememberedKeys)?

    init(environment: [String: String], terminal: TerminalIO, console: Console, remembered: (any RememberedKeys)? = nil) {
        self.environment = environment
        self.terminal = terminal
        self.console = console
        self.remembered = remembered
    }

    /// Only a person at a terminal may mistype; a passphrase from the environment is tried once.
    var tries: Int { environment["MEISHI_PASSPHRASE"] == nil ? Self.passphraseTries : 1 }

    func passphrase(forKeyAt path: String) -> SecureBytes? { passphrase(forKeyAt: path, attempt: 1) }

    func passphrase(forKeyAt path: String, attempt: Int) -> SecureBytes? {
        if let p = environment["MEISHI_PASSPHRASE"] { return SecureBytes(copying: Array(p.utf8)) }
        switch terminal.readHidden(Self.passphrasePrompt(path, attempt: attempt)) {
        case nil: return nil
        // Ctrl-D at a key's prompt is a try with nothing typed, as before (a wrong passphrase).
        case .ended?: return SecureBytes(copying: [])
        case .text(let text)?: return text
        }
    }

    func newPassphrase() throws(MeishiError) -> SecureBytes? {
        if let p = environment["MEISHI_NEW_PASSPHRASE"] ?? environment["MEISHI_PASSPHRASE"] {
            guard !p.isEmpty else { throw .emptyPassphrase }
            warnIfShort(p.utf8.count)
            return SecureBytes(copying: Array(p.utf8))
        }
        let first: SecureBytes
        switch terminal.readHidden(newPrompt + ": ") {
        case nil: return nil
        case .ended?: throw .passphraseCancelled
        case .text(let text)?: first = text
        }
        guard first.count > 0 else { throw .emptyPassphrase }
        warnIfShort(first.withUnsafeBytes { String(decoding: $0, as: UTF8.self).count })
        switch terminal.readHidden("repeat passphrase: ") {
        case nil: return nil
        case .ended?: throw .passphraseCancelled
        case .text(let second)?: guard first == second else { throw .passphrasesDiffer }
        }
        return first
    }

    private func warnIfShort(_ characters: Int) {
        if characters < Self.shortPassphrase { console.warn(Self.passphraseIsShort(characters)) }
    }
}

/// The passphrase that opened the key, offered again without asking.
struct GivenPassphrases: PassphraseSource {
    let value: SecureBytes?
    func passphrase(forKeyAt path: String) -> SecureBytes? { value }
    func newPassphrase() throws(MeishiError) -> SecureBytes? { value }
}

/// The passphrase prompts and the warning for a short new passphrase.
extension TerminalPassphrases {
    /// Passphrases a person at a terminal may try on one key.
    static let passphraseTries = 3
    /// Shorter new passphrases get a warning.
    static let shortPassphrase = 8

    static func passphrasePrompt(_ path: String, attempt: Int) -> String {
        attempt == 1 ? "passphrase for \(path): " : "wrong passphrase, try again (\(attempt) of \(passphraseTries)): "
    }

    static func passphraseIsShort(_ characters: Int) -> String {
        "the passphrase has \(characters) character\(characters == 1 ? "" : "s"); \(shortPassphrase) or more, or a few words, resist guessing far better"
    }
}
