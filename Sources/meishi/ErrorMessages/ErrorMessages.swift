import MeishiKit

/// The words, hints and exit statuses of every failure, one file per area in this folder (files,
/// home, identity, cards, store, QR, exchange, relay, messages, usage): the one place that words a
/// failure and names the flag or command that fixes it. What is not a failure (next steps,
/// legends, reports, prompts) is worded by the command that prints it.
///
/// Messages quote peer text as it is: `Console.report` sanitises every message and hint it
/// writes (the one choke point), and `--json` output escapes through `JSONText`.
extension MeishiFailure {
    /// A MeishiKit failure: each case to its area's initialiser, the libraries' errors to theirs.
    init(_ e: MeishiError) {
        switch e {
        case .cannotRead, .isDirectory, .cannotWrite, .alreadyExists, .fileTooLarge: self.init(file: e)
        case .homeNotDirectory, .cannotCreateHome, .homeNotOwned, .homeWritableByOthers, .noHome, .notAHomeBackup,
             .homeBackupHeader, .homeBackupDamaged, .homeNotEmpty: self.init(home: e)
        case .noIdentity, .identityExists, .notABackup, .identityDamaged, .keyExposed, .keyLimitsTooHigh, .passphraseNeeded,
             .emptyPassphrase, .passphraseCancelled, .passphrasesDiffer, .wrongPassphrase, .cannotDecrypt, .cannotEncrypt, .cannotBackUp,
             .solidarityKeyOfOtherIdentity, .rotatedThisSecond, .rotationsDamaged: self.init(identity: e)
        case .cardFileDamaged, .cardFileRefused, .shareTooLarge, .ownCard, .ownSolidarityCard, .vcard, .notOneCard, .nothingToImport,
             .unsignedContact, .storedCardInvalid: self.init(card: e)
        case .cannotMessage: self.init(message: e)
        case .camera, .noCardSeen: self.init(camera: e)
        case .card(let e): self.init(e)
        case .payload(let e): self.init(e)
        case .solidarity(let e): self.init(e)
        case .store(let e): self.init(e)
        case .qr(let e): self.init(e)
        case .exchange(let e): self.init(e)
        case .tableCodeSpent(let code, let at): self.init(spentTableCode: code, at: at)
        case .messageText(let e): self.init(e)
        case .delivery(let e): self.init(e)
        }
    }
}
