import MeishiCard
import MeishiCrypto
import MeishiProximity
import MeishiQR
import MeishiStore

/// Everything the meishi services can fail with. Cases say what failed and carry the facts;
/// the command-line front end turns them into words, hints and exit statuses.
public enum MeishiError: Error, Sendable {
    // Files and the home
    /// A file could not be read; `missing` when it does not exist.
    case cannotRead(path: String, reason: String, missing: Bool)
    case isDirectory(path: String)
    case cannotWrite(path: String, reason: String)
    case alreadyExists(path: String)
    case homeNotDirectory(path: String)
    case cannotCreateHome(path: String, reason: String)
    /// The home exists but belongs to another user (`owner`, a uid), who could replace its files.
    case homeNotOwned(path: String, owner: UInt32)
    /// The home is writable by group or others (`mode`), who could replace its files.
    case homeWritableByOthers(path: String, mode: UInt32)
    /// Neither a home was given nor can one be derived from `HOME`.
    case noHome

    // The identity
    case noIdentity(home: String)
    case identityExists(home: String)
    /// `identity.key`, `identity.json` or `solidarity.key` is not a meishi identity file (or is inconsistent).
    case identityDamaged(path: String)
    /// `id rotate` twice within one second: the statements are ordered by their time.
    case rotatedThisSecond
    /// `rotations.json` is not a chain of valid supersession statements.
    case rotationsDamaged(path: String)
    /// `init --restore FILE`: the file is not an identity backup (a card, a key file, anything else).
    case notABackup(path: String)
    /// `restore FILE`: the file is not a home backup (`meishi backup` writes one).
    case notAHomeBackup(path: String)
    /// A home backup that opened but holds what no backup holds (written by something else).
    case homeBackupDamaged(path: String)
    /// A home backup whose header (the line before the sealed part) cannot be what `backup`
    /// writes: `reason` says which member is wrong ("has a 3-byte salt, not 16 bytes").
    case homeBackupHeader(path: String, reason: String)
    /// `restore`: the home already holds files (`holds`, their names).
    case homeNotEmpty(path: String, holds: [String])
    /// The secret key file is readable by group or others.
    case keyExposed(path: String, mode: UInt32)
    /// The key file asks for Argon2id limits above those of docs/PROTOCOL.md.
    case keyLimitsTooHigh(path: String, operations: UInt64, memoryBytes: Int)
    case passphraseNeeded
    case emptyPassphrase
    /// The new passphrase's prompt ended without an answer (Ctrl-D): nothing was done.
    case passphraseCancelled
    case passphrasesDiffer
    case wrongPassphrase(path: String)
    case cannotDecrypt(path: String, CryptoError)
    case cannotEncrypt(CryptoError)
    case cannotBackUp(path: String, reason: String)
    /// `solidarity.key` was made for another identity (`owner`, its DID).
    case solidarityKeyOfOtherIdentity(path: String, owner: String)

    // The user's card
    case cardFileDamaged(path: String, reason: String)
    /// `card.json` holds a value `card set` refuses (edited by hand): the first such value's reason.
    case cardFileRefused(path: String, CardError)
    /// A signed share would exceed the payload size limit.
    case shareTooLarge(bytes: Int)
    /// A card being stored is the user's own.
    case ownCard
    /// A Solidarity card being stored was issued by the user's own Solidarity key.
    case ownSolidarityCard

    // Importing, exporting and passing on contacts
    /// An input file is larger than the command reads (`limit` bytes).
    case fileTooLarge(path: String, limit: Int)
    /// Something wrong in a vCard file, located by line.
    case vcard(path: String, VCardProblem)
    /// `card import` fills the card from one vCard; the file holds `count`.
    case notOneCard(path: String, count: Int)
    /// `card import` found nothing the card does not already hold.
    case nothingToImport(path: String)
    /// An unsigned contact has no signed card to pass on (`name` as stored: peer text).
    case unsignedContact(id: Int64, name: String)
    /// A stored signed card no longer verifies.
    case storedCardInvalid(id: Int64, PayloadError)

    // Messages
    /// The contact cannot receive messages: unsigned (a vCard), or its card carries no X25519 key.
    case cannotMessage(id: Int64, name: String, CannotMessage)
    /// The text or the lifetime of a message being sent was refused.
    case messageText(MessageEnvelopeError)
    /// A message was not delivered (exit 75 when nobody answered).
    case delivery(MessageDeliveryFailure)

    // The layers below
    case card(CardError)
    case payload(PayloadError)
    /// A Solidarity card that did not verify.
    case solidarity(SolidarityError)
    case store(StoreError)
    case qr(QRError)
    case exchange(ExchangeFailure)
    /// `exchange --table CODE` with a code a table of this home already used, at `at` (Unix seconds).
    case tableCodeSpent(code: String, at: Int64)

    // scan --camera
    /// The camera at `device` could not be opened or stopped delivering frames.
    case camera(device: String, CameraError)
    /// No card came into view within the timeout.
    case noCardSeen(device: String, seconds: Int)
}

/// Why a contact cannot be sent a message.
public enum CannotMessage: Sendable {
    case unsigned
    case noKey
    /// The ref names my own identity.
    case yourself
}
