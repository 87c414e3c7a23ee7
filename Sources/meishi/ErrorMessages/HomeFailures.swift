import MeishiKit

/// The home directory, `backup` and `restore`.
extension MeishiFailure {
    /// The home directory and whole-home backups (`init(_: MeishiError)` routes them here).
    init(home e: MeishiError) {
        switch e {
        case .homeNotDirectory(let path): self.init("\(path) is not a directory", status: .usage)
        case .cannotCreateHome(let path, let reason): self.init("cannot create \(path): \(reason)", status: .failure)
        case .homeNotOwned(let path, let owner):
            self.init("refusing the home \(path): it belongs to another user (uid \(owner)), who could replace its files",
                      hint: "use a home of your own (--home DIR or MEISHI_HOME), or have its owner hand it over", status: .permission)
        case .homeWritableByOthers(let path, let mode):
            self.init("refusing the home \(path): others can write to it (mode \(String(mode, radix: 8))), so its files may have been replaced",
                      hint: "check its files, then chmod 700 \(path)", status: .permission)
        case .noHome:
            self.init("cannot find a home for meishi: HOME is not set", hint: "pass --home DIR or set MEISHI_HOME", status: .usage)
        case .notAHomeBackup(let path):
            self.init("\(path) is not a meishi home backup",
                      hint: "'meishi backup' writes one; an identity backup from 'meishi id export' is restored with 'meishi init --restore'",
                      status: .dataError)
        case .homeBackupHeader(let path, let reason): self = .homeBackupHeader(path, reason)
        case .homeBackupDamaged(let path):
            self.init("\(path) is damaged: it opened, but does not hold a meishi home", hint: "use another copy", status: .dataError)
        case .homeNotEmpty(let path, let holds):
            let shown = holds.prefix(4).joined(separator: ", ") + (holds.count > 4 ? ", …" : "")
            self.init("\(path) is not empty (\(shown)): a home is restored only into an empty directory",
                      hint: "restore into a new home with --home DIR, or move \(path) away first", status: .cannotCreate)
        default: preconditionFailure("not a home failure: \(e)")
        }
    }

    /// `backup -o FILE` where FILE exists: a backup is never written over a file.
    static func homeBackupFileExists(_ path: String) -> MeishiFailure {
        MeishiFailure("\(path) already exists: a backup is never written over a file", hint: "choose another file name",
                      status: .cannotCreate)
    }

    static let binaryToTerminal = MeishiFailure("refusing to write an encrypted backup to a terminal",
                                                hint: "name a file with -o FILE, or redirect standard output", status: .usage)
}

/// Issue 21 (second pass): what a crafted backup header says.
extension MeishiFailure {
    /// `restore`: a header `backup` cannot have written (before any passphrase is asked).
    static func homeBackupHeader(_ path: String, _ reason: String) -> MeishiFailure {
        MeishiFailure("\(path) is not a meishi home backup: its header \(reason)",
                      hint: "'meishi backup' writes one; use another copy", status: .dataError)
    }
}
