import Foundation
import ArgumentParser
import MeishiCrypto
import MeishiCard
import MeishiKit

struct Id: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Show your DID, fingerprint and key file; back up or replace your keys.",
        discussion: """
            'meishi id' (= 'meishi id show') reads only the public identity: no passphrase is needed.

            Examples:
              meishi id
              meishi id export -o meishi-backup.json
              meishi id rotate
            """,
        subcommands: [IdShow.self, IdExport.self, IdRotate.self], defaultSubcommand: IdShow.self)
}

struct IdShow: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show your DID, fingerprint and key file.",
        discussion: """
            Reads only the public identity: no passphrase is needed.

            Examples:
              meishi id
              meishi id --json
            """)

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

struct IdRotate: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Replace your keys with new ones that your contacts follow.",
        discussion: """
            Makes a new Ed25519 key (a new DID) and a new X25519 key, and a statement that the old \
            DID is replaced by the new one, signed by both keys (docs/PROTOCOL.md §10). The statement \
            is kept in rotations.json and handed over with your card: 'meishi card push' delivers it to \
            contacts running 'meishi listen', and every exchange hands it over; a contact holding your \
            old DID checks both signatures and moves you to the new one, keeping history, notes, tags, \
            meetings and trust. The old Ed25519 key is used once, to sign the statement, and not \
            written anywhere; the old X25519 key is kept in previous-box.key (under the same \
            passphrase) for 30 days, so that 'card push' can reach contacts who know only it, then \
            deleted (--forget-old-key: now). Your card and contacts stay; the Solidarity key, bound to \
            the old DID, is replaced on next use. Old QR codes of your card are then recognised as \
            superseded by contacts who applied the statement. Asks first on a terminal.

            Examples:
              meishi id rotate
              meishi card push
              meishi id rotate --forget-old-key
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(name: .shortAndLong, help: "Replace the keys without asking.")
    var yes = false

    @Flag(help: "Only delete the old X25519 key kept since the last rotation (contacts not reached yet learn of it at the next exchange).")
    var forgetOldKey = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        if forgetOldKey {
            let forgot = try session.home.exclusively { session.identities.forgetPreviousBoxKey() }
            if json { return ctx.out.json(.object(["forgotOldKey": .bool(forgot)])) }
            return ctx.out.note(forgot ? "deleted the old X25519 key (\(session.home.previousBoxKeyPath))" : "no old key is kept: nothing to delete")
        }
        let before = try session.identities.loadPublic()
        if !yes, ctx.terminal.isInteractive {
            guard ctx.terminal.confirm("replace your keys (\(before.did)) with new ones? contacts follow once they get the statement [y/N] ")
            else { throw MeishiFailure.keysNotReplaced }
        }
        let rotated = try session.home.exclusively { try session.identities.rotate(passphrases: ctx.passphrases, now: ctx.unixNow) }
        let s = rotated.statement
        if json {
            return ctx.out.json(.object([
                "oldDID": .string(s.oldDID), "newDID": .string(s.newDID), "time": .string(CardRendering.date(s.time)),
                "fingerprint": .string(rotated.identity.publicIdentity.fingerprint),
                "statement": .string(String(decoding: s.bytes.dropLast(), as: UTF8.self)),
                "oldBoxKeyKeptUntil": .string(CardRendering.date(rotated.oldBoxKeyUntil)),
            ]))
        }
        ctx.out.line("""
            replaced     \(s.oldDID)
            by           \(s.newDID)
            fingerprint  \(rotated.identity.publicIdentity.fingerprint)
            """)
        ctx.out.note("the statement signed by both keys is in \(session.home.rotationsPath); the old X25519 key is kept until "
                     + "\(CardRendering.day(rotated.oldBoxKeyUntil)) to reach contacts who know only it")
        ctx.out.note("run 'meishi card push' to hand it to your contacts running 'meishi listen'; the others get it at the next exchange")
    }
}
