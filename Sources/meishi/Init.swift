import ArgumentParser
import MeishiCard
import MeishiKit

struct Init: MeishiCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create your identity: an Ed25519 signing key and an X25519 key for sealed messages.",
        discussion: """
            The keys are written to identity.key (mode 0600, never overwritten) and the public half \
            to identity.json in the meishi home, which is created with mode 0700.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: ArgumentHelp("Encrypt the secret key with a passphrase (Argon2id + XChaCha20-Poly1305).",
                             discussion: "The passphrase comes from MEISHI_PASSPHRASE or is asked on the terminal."))
    var passphrase = false

    @Flag(help: "Replace an existing identity; the old key files are kept as *.bak-<time>.")
    var force = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        // Refuse before asking for a passphrase that would not be used.
        if !force { try session.identities.refuseExisting() }
        let secret = passphrase ? try ctx.passphrases.newPassphrase() : nil
        if passphrase, secret == nil {
            throw MeishiFailure("--passphrase needs a terminal or MEISHI_PASSPHRASE",
                                hint: "MEISHI_PASSPHRASE=… meishi init --passphrase", status: .usage)
        }
        let (identity, backup) = try session.identities.create(passphrase: secret, force: force, now: ctx.unixNow)
        let pub = identity.publicIdentity
        if json {
            var obj: [String: JSONValue] = [
                "did": .string(pub.did), "fingerprint": .string(pub.fingerprint),
                "keyFile": .string(session.home.secretKeyPath), "encrypted": .bool(passphrase),
            ]
            if let backup { obj["backup"] = .string(backup) }
            ctx.out.json(.object(obj))
            return
        }
        if let backup { ctx.out.note("previous key kept as \(backup)") }
        ctx.out.line("""
            created identity \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(passphrase ? " (encrypted)" : "")
            next: meishi card set name "Your Name"
            """)
    }
}
