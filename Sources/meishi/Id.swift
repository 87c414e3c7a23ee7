import Foundation
import ArgumentParser
import MeishiCrypto
import MeishiCard
import MeishiKit

struct Id: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Show your DID, fingerprint and key file.",
        discussion: """
            Reads only the public identity: no passphrase is needed.

            Examples:
              meishi id
              meishi id export -o meishi-backup.json
            """,
        subcommands: [IdExport.self])

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let pub = try session.identities.loadPublic()
        let encrypted = try session.identities.isEncrypted()
        if json {
            ctx.out.json(.object([
                "did": .string(pub.did),
                "fingerprint": .string(pub.fingerprint),
                "keyFile": .string(session.home.secretKeyPath),
                "pubKey": .string(Base64URL.encode(pub.boxPublicKey.rawRepresentation)),
                "encrypted": .bool(encrypted),
            ]))
            return
        }
        ctx.out.line("""
            did          \(pub.did)
            fingerprint  \(pub.fingerprint)
            secret key   \(session.home.secretKeyPath)\(encrypted ? " (encrypted)" : "")
            """)
    }
}

struct IdExport: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write an encrypted backup of your identity.",
        discussion: """
            The backup holds your secret key sealed under a passphrase (Argon2id + \
            XChaCha20-Poly1305) asked twice, or taken from MEISHI_NEW_PASSPHRASE; your current \
            passphrase is asked first when the key has one. Restore it with 'meishi init --restore \
            FILE'. The Solidarity key is not in it: a new one is made on next use.

            Example:
              meishi id export -o meishi-backup.json
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE (mode 0600) instead of standard output.", valueName: "file"),
            completion: .file())
    var output: String?

    @Flag(help: "Replace FILE when it exists (without it, an existing file is never overwritten).")
    var force = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        // Before any passphrase is asked.
        var st = stat()
        if let output, output != "-", !force, lstat(output, &st) == 0 { throw MeishiFailure.backupFileExists(output) }
        let (_, current) = try session.identities.loadRemembering(passphrases: ctx.passphrases)
        var asking = ctx.passphrases
        asking.newPrompt = "passphrase for the backup"
        guard let backupPassphrase = try asking.newPassphrase() else { throw MeishiFailure.passphraseNeedsTerminal }
        var bytes = try session.identities.backup(passphrases: GivenPassphrases(value: current), backupPassphrase: backupPassphrase, now: ctx.unixNow)
        defer { wipe(&bytes) }
        if let output, output != "-" {
            // Created exclusively: a file that appeared while the passphrases were typed is not overwritten either.
            do { try session.identities.writeBackup(bytes, to: output, replacing: force) } catch .alreadyExists {
                throw MeishiFailure.backupFileExists(output)
            }
            ctx.out.note("wrote an encrypted backup of \(try session.identities.loadPublic().did) to \(output)")
        } else {
            ctx.out.bytes(bytes)
        }
    }
}
