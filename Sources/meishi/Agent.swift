import Foundation
import MeishiCrypto
import MeishiKeyring
import MeishiKit

/// The passphrase agent: after an unlock, the key-encryption key Argon2id derived (never the
/// passphrase) is kept in the kernel's session keyring for `--remember` (or the configuration
/// file's `remember`), so later commands of the session open the key without asking; `meishi
/// lock` drops it. Off by default: a kept key is readable by every process of this session
/// for that long, which a person must choose (docs/SECURITY.md).
final class Agent: RememberedKeys, @unchecked Sendable {
    /// The longest a key may be kept: a working day.
    static let maximumSeconds: Int64 = 12 * 3600

    private let lock = NSLock()
    private var seconds: Int64 = 0
    private var failure: SessionKeyring.Failure?
    private var console: Console?

    /// Keeps the keys of this command's unlocks for `seconds` (0: keeps none); a key that cannot
    /// be kept is said on `console`.
    func remember(for seconds: Int64, console: Console) {
        precondition((0...Self.maximumSeconds).contains(seconds))
        lock.withLock { (self.seconds, self.console) = (seconds, console) }
    }

    func key(named name: String) -> SecureBytes? { SessionKeyring.read(name: name) }

    func remember(_ key: SecureBytes, named name: String) {
        let seconds = lock.withLock { self.seconds }
        guard seconds > 0 else { return }
        do {
            try SessionKeyring.store(key, name: name, seconds: UInt32(seconds))
        } catch {
            // The unlock worked; only the remembering did not: said once, not an error.
            let console = lock.withLock { () -> Console? in defer { failure = error }; return failure == nil ? self.console : nil }
            console?.warn(Agent.cannotRemember(error))
        }
    }

    func forget(named name: String) { SessionKeyring.remove(name: name) }
}

extension Agent {
    /// The agent could not keep a key (the unlock itself worked).
    static func cannotRemember(_ failure: SessionKeyring.Failure) -> String {
        switch failure {
        case .unavailable(let e):
            "the passphrase is not remembered: no session keyring (\(String(cString: strerror(e)))); it will be asked again"
        case .refused(let e):
            "the passphrase is not remembered: the kernel refused the key (\(String(cString: strerror(e)))); it will be asked again"
        }
    }
}
