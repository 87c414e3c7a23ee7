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
        if let backup { ctx.out.note(Self.previousKeyKept(backup)) }
        ctx.out.line("""
            created identity \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(passphrase ? " (encrypted)" : "")
            \(Self.nextAfterInit(global.home))
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
        if let backup { ctx.out.note(Self.previousKeyKept(backup)) }
        for note in Self.restoreNotes(installed, cardPath: session.home.cardPath) { ctx.out.note(note) }
        if !SecureFile.exists(session.home.cardPath) { ctx.out.note(Self.backupHoldsNoCard) }
        ctx.out.line("""
            restored identity \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(encrypted ? " (encrypted with the backup's passphrase)" : "")
            """)
    }
}

/// What `init` prints besides failures: the next step, and what a restore kept or moved.
extension Init {
    /// `meishi` as the person runs it: with `--home DIR` when they gave one.
    static func meishi(_ home: String?) -> String {
        guard let home else { return "meishi" }
        return "meishi --home " + (home.contains(where: { " '\"$\\".contains($0) }) ? "'\(home.replacingOccurrences(of: "'", with: "'\\''"))'" : home)
    }

    static func nextAfterInit(_ home: String?) -> String { "next: \(meishi(home)) card set name \"Your Name\"" }

    /// The key files a replacement renamed.
    static func previousKeyKept(_ backup: String) -> String {
        let suffix = backup.range(of: ".bak-").map { String(backup[$0.lowerBound...]) } ?? ""
        return "previous identity kept as \(backup) (its other key files too, with the same \(suffix) suffix)"
    }

    /// What a restore moved aside or back, one note each.
    static func restoreNotes(_ installed: IdentityStore.Installed, cardPath: String) -> [String] {
        var notes: [String] = []
        if !installed.setAside.isEmpty {
            notes.append("the previous identity's " + installed.setAside.map { $0.hasPrefix(cardPath) ? "card" : "store" }
                .joined(separator: " and ") + " (not the restored one's) kept as " + installed.setAside.joined(separator: " and "))
        }
        if !installed.broughtBack.isEmpty {
            notes.append("brought back this identity's card and store set aside earlier: " + installed.broughtBack.joined(separator: " and "))
        }
        if !installed.keptAsideForIt.isEmpty {
            notes.append("this identity's card or store from before is kept as " + installed.keptAsideForIt.joined(separator: " and ")
                         + ": move it back by hand to use it")
        }
        return notes
    }

    static let backupHoldsNoCard = "a backup holds the identity, not the card: set yours with 'meishi card set name \"Your Name\"'"
}
