import ArgumentParser
import MeishiCrypto
import MeishiCard
import MeishiKit

struct Init: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create your identity: an Ed25519 signing key and an X25519 key for sealed messages.",
        discussion: """
            The keys are written to identity.key (mode 0600, never overwritten) and the public half \
            to identity.json in the meishi home, which is created with mode 0700.

            Examples:
              meishi init
              meishi init --passphrase
              meishi init --restore meishi-backup.json
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: ArgumentHelp("Encrypt the secret key with a passphrase (Argon2id + XChaCha20-Poly1305).",
                             discussion: "The passphrase comes from MEISHI_PASSPHRASE or is asked on the terminal."))
    var passphrase = false

    @Flag(help: "Replace an existing identity; the old key files are kept as *.bak-<time> (with --restore of another identity, its card and contacts too).")
    var force = false

    @Option(help: ArgumentHelp("Restore the identity from a backup made by 'meishi id export' (its passphrase is asked).",
                               valueName: "file"), completion: .file())
    var restore: String?

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx, needsIdentity: false)
        // Refuse before asking for a passphrase that would not be used.
        if !force {
            do { try session.identities.refuseExisting() } catch .identityExists(let home) {
                var failure = MeishiFailure(MeishiError.identityExists(home: home))
                if let restore { failure.hint = MeishiFailure.restoreOverHint(restore) }
                throw failure
            }
        }
        if let restore {
            try restoreIdentity(from: restore, session, ctx)
            return
        }
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
        if let backup { ctx.out.note(MeishiFailure.previousKeyKept(backup)) }
        ctx.out.line("""
            created identity \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(passphrase ? " (encrypted)" : "")
            \(MeishiFailure.nextAfterInit(global.home))
            """)
    }

    /// `--restore FILE`: the backup's identity, its key sealed under the backup's passphrase.
    private func restoreIdentity(from file: String, _ session: HomeSession, _ ctx: Context) throws {
        var bytes = try ctx.readAtMost(file, limit: 4096)
        defer { wipe(&bytes) }
        let installed: IdentityStore.Installed
        do {
            installed = try session.identities.restore(bytes, path: file, passphrases: ctx.passphrases, force: force, now: ctx.unixNow)
        } catch {
            throw MeishiFailure.restoreFailure(error, file: file)
        }
        let pub = installed.identity.publicIdentity, backup = installed.backup
        let encrypted = try session.identities.isEncrypted()
        if json {
            var obj: [String: JSONValue] = [
                "did": .string(pub.did), "fingerprint": .string(pub.fingerprint), "restoredFrom": .string(file),
                "keyFile": .string(session.home.secretKeyPath), "encrypted": .bool(encrypted),
            ]
            if let backup { obj["backup"] = .string(backup) }
            if !installed.setAside.isEmpty { obj["setAside"] = .array(installed.setAside.map { .string($0) }) }
            if !installed.broughtBack.isEmpty { obj["broughtBack"] = .array(installed.broughtBack.map { .string($0) }) }
            if !installed.keptAsideForIt.isEmpty { obj["keptAside"] = .array(installed.keptAsideForIt.map { .string($0) }) }
            ctx.out.json(.object(obj))
            return
        }
        if let backup { ctx.out.note(MeishiFailure.previousKeyKept(backup)) }
        for note in MeishiFailure.restoreNotes(installed, cardPath: session.home.cardPath) { ctx.out.note(note) }
        if !SecureFile.exists(session.home.cardPath) { ctx.out.note(MeishiFailure.backupHoldsNoCard) }
        ctx.out.line("""
            restored identity \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(encrypted ? " (encrypted with the backup's passphrase)" : "")
            """)
    }
}
