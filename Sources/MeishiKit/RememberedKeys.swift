import MeishiCrypto

/// Where a key-encryption key, derived from a passphrase by Argon2id, is kept between commands so
/// the passphrase is typed once per session (`meishi --remember 15m`): the kernel's session
/// keyring in the CLI. Never the passphrase itself: a key opens only the file sealed with its
/// salt, and an attacker who reads it learns nothing that outlives that file.
public protocol RememberedKeys: Sendable {
    /// The key kept under `name`, or nil.
    func key(named name: String) -> SecureBytes?
    /// Keeps `key` under `name` (for as long as the keeper was told); failures are the keeper's to report.
    func remember(_ key: SecureBytes, named name: String)
    /// Drops the key kept under `name`, if any (it no longer opens its file).
    func forget(named name: String)
}
