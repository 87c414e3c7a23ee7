import MeishiCrypto
import MeishiKit

/// The identity: key files, passphrases, `init --restore` and `id export`.
extension MeishiFailure {
    /// The identity, its key files and passphrases (`init(_: MeishiError)` routes them here).
    init(identity e: MeishiError) {
        switch e {
        case .noIdentity(let home):
            self.init("no identity in \(home)", hint: "run 'meishi init' to create one there, or check --home and MEISHI_HOME",
                      status: .noInput)
        case .identityExists(let home):
            self.init("an identity already exists in \(home)",
                      hint: "use 'meishi init --force' to replace it (the old key is kept as a backup)", status: .failure)
        case .notABackup(let path):
            self.init("\(path) is not a meishi identity backup", hint: "'meishi id export' writes one", status: .dataError)
        case .identityDamaged(let path):
            if path.hasSuffix(".json") {
                self.init("\(path) is damaged", hint: "restore it from a backup or run 'meishi init --force'", status: .dataError)
            } else {
                self.init("secret key \(path) is damaged or not a meishi key", status: .dataError)
            }
        case .keyExposed(let path, let mode):
            self.init("secret key \(path) is accessible by others (mode \(String(mode, radix: 8)))", hint: "chmod 600 \(path)",
                      status: .permission)
        case .keyLimitsTooHigh(let path, let ops, let mem):
            self.init("secret key \(path) asks for Argon2id with \(ops) passes and \(mem >> 20) MiB, over the limits of "
                      + "\(PassphraseProtection.Limits.maximum.operations) passes and \(PassphraseProtection.Limits.maximum.memoryBytes >> 20) MiB",
                      hint: "the file was not written by meishi; restore it from a backup", status: .dataError)
        case .passphraseNeeded:
            self.init("the secret key is encrypted and no passphrase was given",
                      hint: "set MEISHI_PASSPHRASE or run meishi on a terminal", status: .permission)
        case .emptyPassphrase: self.init("the passphrase is empty", status: .usage)
        // Trial 7, F10: Ctrl-D at the prompt was "the passphrase is empty" (a usage error) on the prompt's line.
        case .passphraseCancelled: self.init("cancelled at the passphrase prompt (end of input): nothing was done", status: .failure)
        case .passphrasesDiffer:
            self.init("the passphrases do not match; nothing was changed", hint: "type the same passphrase twice", status: .permission)
        // The seal cannot tell a wrong passphrase from a damaged (cut short, altered) file.
        case .wrongPassphrase(let path): self.init("wrong passphrase for \(path), or the file is damaged", status: .permission)
        case .cannotDecrypt(let path, let why): self.init("cannot decrypt \(path): \(why)", status: .permission)
        case .cannotEncrypt(let why): self.init("cannot encrypt the key: \(why)", status: .failure)
        case .cannotBackUp(let path, let reason): self.init("cannot back up \(path): \(reason)", status: .failure)
        case .solidarityKeyOfOtherIdentity(let path, let owner):
            self.init("\(path) belongs to another identity (\(owner))",
                      hint: "move it away; a new Solidarity key is made on next use", status: .dataError)
        case .rotatedThisSecond:
            self.init("your key was replaced less than a second ago; nothing was changed", hint: "wait a second and run it again",
                      status: .timedOut)
        case .rotationsDamaged(let path):
            self.init("\(path) is damaged: it is not a chain of key rotations signed by both keys",
                      hint: "restore it from a backup (meishi restore); contacts will learn of the rotation at the next exchange",
                      status: .dataError)
        default: preconditionFailure("not a identity failure: \(e)")
        }
    }

    static let passphraseNeedsTerminal = MeishiFailure("a new passphrase needs a terminal or MEISHI_NEW_PASSPHRASE",
                                                       hint: "run it on a terminal, or set MEISHI_NEW_PASSPHRASE", status: .usage)

    static let alreadyEncrypted = MeishiFailure("the secret key already has a passphrase", hint: "meishi passphrase change", status: .usage)
    static let noPassphraseToRemove = MeishiFailure("the secret key has no passphrase: nothing to remove",
                                                    hint: "it is already stored in the clear; 'meishi passphrase set' adds one", status: .failure)

    /// `init --restore FILE` into a home that has an identity.
    static func restoreOverHint(_ file: String) -> String {
        "use 'meishi init --restore \(file) --force' to replace it (the present identity is kept as *.bak-<time>)"
    }

    /// A restore that failed on the backup file itself gets a hint about that file.
    static func restoreFailure(_ e: MeishiError, file: String) -> MeishiFailure {
        var failure = MeishiFailure(e)
        switch e {
        case .identityDamaged(let path) where path == file, .keyLimitsTooHigh(let path, _, _) where path == file:
            failure.hint = "this backup is damaged or was not made by 'meishi id export'; use another copy"
        case .wrongPassphrase(let path) where path == file:
            failure.hint = "the passphrase given when the backup was made (or the backup was altered)"
        default: break
        }
        return failure
    }

    /// `id export -o FILE` where FILE exists: it may be the only copy of another key.
    static func backupFileExists(_ path: String) -> MeishiFailure {
        MeishiFailure("\(path) already exists: a backup may be the only copy of a key, so it is not overwritten",
                      hint: "choose another file name, or pass --force to replace it", status: .cannotCreate)
    }

    static let keysNotReplaced = MeishiFailure("nothing changed: your keys are as they were", status: .failure)

    static let notEncrypted = MeishiFailure("the secret key has no passphrase", hint: "meishi passphrase set", status: .usage)

    static let identityFileNotACard = "that is a meishi identity file (or backup), not a card: 'meishi card export' writes your card"

    static let newPassphraseNeeded = MeishiFailure("MEISHI_PASSPHRASE is the current passphrase; the new one is missing",
                                                   hint: "set MEISHI_NEW_PASSPHRASE too, or run it on a terminal", status: .usage)

    static let samePassphrase = MeishiFailure("the new passphrase is the current one: nothing changed",
                                              hint: "choose another passphrase", status: .usage)
}
