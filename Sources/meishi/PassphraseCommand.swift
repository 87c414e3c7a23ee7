import ArgumentParser
import MeishiCrypto
import MeishiKit

struct PassphraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passphrase",
        abstract: "Set, change or remove the passphrase of your secret key.",
        discussion: """
            The identity stays the same: only how identity.key (and solidarity.key, which shares \
            its passphrase) is protected changes. Each key file is rewritten to a temporary file and \
            renamed over the old one, mode 0600. The current passphrase comes from MEISHI_PASSPHRASE \
            or the terminal, a new one from MEISHI_NEW_PASSPHRASE or the terminal (asked twice).

            Examples:
              meishi passphrase set
              meishi passphrase change
            """,
        subcommands: [PassphraseSet.self, PassphraseChange.self, PassphraseRemove.self])
}

/// Re-seals the key files under a new passphrase (nil: in the clear) and says so.
/// Under the home's lock from the first look at the key to the last rename: of two commands run
/// at once, the second sees what the first did (two `passphrase set` both said they had set it,
/// and one of the two passphrases then failed).
private func reprotect(_ global: GlobalOptions, _ ctx: Context, wantEncrypted: Bool?, removing: Bool) throws {
    let session = try global.session(ctx)
    try session.home.exclusively { try reprotect(session, ctx, wantEncrypted: wantEncrypted, removing: removing) }
}

private func reprotect(_ session: HomeSession, _ ctx: Context, wantEncrypted: Bool?, removing: Bool) throws {
    let encrypted = try session.identities.isEncrypted()
    if wantEncrypted == false, encrypted { throw MeishiFailure.alreadyEncrypted }
    if wantEncrypted == true, !encrypted { throw removing ? MeishiFailure.noPassphraseToRemove : MeishiFailure.notEncrypted }
    // Open the key first, so a wrong current passphrase is said before a new one is asked.
    let (_, current) = try session.identities.loadRemembering(passphrases: ctx.passphrases)
    let opened = GivenPassphrases(value: current)
    var new: SecureBytes?
    if !removing {
        // For a change, MEISHI_PASSPHRASE is the current passphrase: never taken as the new one too.
        if wantEncrypted == true, ctx.environment["MEISHI_NEW_PASSPHRASE"] == nil, ctx.environment["MEISHI_PASSPHRASE"] != nil {
            throw MeishiFailure.newPassphraseNeeded
        }
        guard let p = try ctx.passphrases.newPassphrase() else { throw MeishiFailure.passphraseNeedsTerminal }
        if let current, p == current { throw MeishiFailure.samePassphrase }
        new = p
    }
    try session.identities.reprotect(passphrases: opened, newPassphrase: new)
    ctx.out.line(removing ? "removed the passphrase: \(session.home.secretKeyPath) is no longer encrypted"
                          : "\(session.home.secretKeyPath) is now encrypted with the new passphrase")
}

struct PassphraseSet: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Encrypt a secret key that has no passphrase.",
        discussion: "Example:\n  meishi passphrase set")
    @OptionGroup var global: GlobalOptions
    func run(_ ctx: Context) throws { try reprotect(global, ctx, wantEncrypted: false, removing: false) }
}

struct PassphraseChange: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "change", abstract: "Change the passphrase of an encrypted secret key.",
        discussion: "Example:\n  meishi passphrase change")
    @OptionGroup var global: GlobalOptions
    func run(_ ctx: Context) throws { try reprotect(global, ctx, wantEncrypted: true, removing: false) }
}

struct PassphraseRemove: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Store the secret key without a passphrase.",
        discussion: "Anyone who can read your files can then use your identity.\n\nExample:\n  meishi passphrase remove")
    @OptionGroup var global: GlobalOptions
    func run(_ ctx: Context) throws { try reprotect(global, ctx, wantEncrypted: true, removing: true) }
}
