import ArgumentParser
import Foundation
import MeishiCard
import MeishiCrypto
import MeishiKit

struct Backup: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write the whole home (keys, card, contacts, notes) to one encrypted file.",
        discussion: """
            The file holds the key files as they are (a key with a passphrase keeps it), your card, \
            and a consistent snapshot of the store: contacts, common friends and notes, taken while \
            other meishi commands may go on writing. It is sealed under a passphrase (Argon2id + \
            XChaCha20-Poly1305) asked twice, or taken from MEISHI_NEW_PASSPHRASE or \
            MEISHI_PASSPHRASE, written with mode 0600, and never written over an existing file. \
            Restore it with 'meishi restore FILE' on the new machine. To move only the identity, \
            use 'meishi id export'.

            Example:
              meishi backup -o meishi-home.backup
            """)

    @OptionGroup var global: GlobalOptions

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE (mode 0600; never replaced), or '-' for standard output.", valueName: "file"),
            completion: .file())
    var output: String

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        // Before any passphrase is asked.
        var st = stat()
        if output != "-", lstat(output, &st) == 0 { throw MeishiFailure.homeBackupFileExists(output) }
        if output == "-", ctx.terminal.standardOutputIsTerminal { throw MeishiFailure.binaryToTerminal }
        let store = try session.contacts.open(readOnly: true)
        var asking = ctx.passphrases
        asking.newPrompt = "passphrase for the backup"
        guard let passphrase = try asking.newPassphrase() else { throw MeishiFailure.passphraseNeedsTerminal }
        var bytes = try HomeBackup(home: session.home).make(store: store, passphrase: passphrase, now: ctx.unixNow)
        defer { wipe(&bytes) }
        guard output != "-" else { return ctx.out.bytes(bytes) }
        // Created exclusively: a file that appeared while the passphrases were typed is not overwritten either.
        do { try SecureFile.create(bytes, at: output) } catch .alreadyExists { throw MeishiFailure.homeBackupFileExists(output) }
        let size = bytes.count >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes.count) / 1048576)
            : "\((bytes.count + 1023) >> 10) KiB"
        ctx.out.note("wrote an encrypted backup of this home (\(size)) to \(output)")
    }
}

struct Restore: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a whole home from a file 'meishi backup' wrote.",
        discussion: """
            Asks for the backup's passphrase (or takes MEISHI_PASSPHRASE). The home (--home, \
            MEISHI_HOME or the default) must be empty or not exist: a home that holds anything is \
            refused, nothing in it is touched. The files are written beside it and renamed into \
            place at once, so a restore cut short leaves no half-restored home. The secret key keeps \
            the passphrase it had (none when it had none).

            Example:
              meishi restore meishi-home.backup --home ~/.local/share/meishi
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The backup file ('-' for standard input).", valueName: "file"), completion: .file())
    var file: String

    @Flag(help: "Print the result as JSON.")
    var json = false

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx, needsIdentity: false)
        let backup = HomeBackup(home: session.home)
        var bytes = try ctx.readAtMost(file, limit: HomeBackup.maximumBytes)
        defer { wipe(&bytes) }
        // A full home is refused before the passphrase is asked (and again when the files go in).
        try backup.refuseNonEmpty()
        let contents = try HomeBackup.open(bytes, path: file, passphrases: ctx.passphrases)
        try backup.restore(contents)
        let what = ["identity"] + (contents.hasCard ? ["card"] : []) + (contents.hasStore ? ["contacts and notes"] : [])
        if json {
            ctx.out.json(.object([
                "did": .string(contents.did), "home": .string(session.home.path), "restoredFrom": .string(file),
                "created": .string(CardRendering.date(contents.created)), "card": .bool(contents.hasCard), "store": .bool(contents.hasStore),
            ]))
            return
        }
        ctx.out.line("restored \(contents.did) into \(session.home.path): \(what.joined(separator: ", ")) "
                     + "(backup made \(UTCTime.rfc3339(contents.created)))")
    }
}
