import MeishiCard
import MeishiCrypto
import MeishiKit
import MeishiProximity
import MeishiQR
import MeishiStore

/// The words, hints and exit statuses of every failure: the one place that names flags and commands.
///
/// Messages quote peer text as it is: `Console.report` sanitises every message and hint it
/// writes (the one choke point), and `--json` output escapes through `JSONText`.
extension MeishiFailure {
    init(_ e: MeishiError) {
        switch e {
        case .cannotRead(let path, let reason, let missing):
            self.init("cannot read \(path): \(reason)", hint: missing ? "check the path" : nil, status: .noInput)
        case .isDirectory(let path): self.init("cannot read \(path): it is a directory", status: .noInput)
        case .cannotWrite(let path, let reason): self.init("cannot write \(path): \(reason)", status: .failure)
        case .alreadyExists(let path): self.init("\(path) already exists", status: .failure)
        case .homeNotDirectory(let path): self.init("\(path) is not a directory", status: .usage)
        case .cannotCreateHome(let path, let reason): self.init("cannot create \(path): \(reason)", status: .failure)
        case .noHome:
            self.init("cannot find a home for meishi: HOME is not set", hint: "pass --home DIR or set MEISHI_HOME", status: .usage)
        case .noIdentity(let home):
            self.init("no identity in \(home)", hint: "run 'meishi init' first (or pass --home DIR)", status: .noInput)
        case .identityExists(let home):
            self.init("an identity already exists in \(home)",
                      hint: "use 'meishi init --force' to replace it (the old key is kept as a backup)", status: .failure)
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
        case .passphrasesDiffer: self.init("the passphrases do not match", status: .usage)
        case .wrongPassphrase(let path): self.init("wrong passphrase for \(path)", status: .permission)
        case .cannotDecrypt(let path, let why): self.init("cannot decrypt \(path): \(why)", status: .permission)
        case .cannotEncrypt(let why): self.init("cannot encrypt the key: \(why)", status: .failure)
        case .cannotBackUp(let path, let reason): self.init("cannot back up \(path): \(reason)", status: .failure)
        case .solidarityKeyOfOtherIdentity(let path, let owner):
            self.init("\(path) belongs to another identity (\(TerminalText.sanitized(owner)))",
                      hint: "move it away; a new Solidarity key is made on next use", status: .dataError)
        case .cardFileDamaged(let path, let reason):
            self.init("\(path) is damaged: \(reason)", hint: "fix or remove the file", status: .dataError)
        case .shareTooLarge(let bytes):
            self.init("the signed card would be \(bytes) bytes, over the \(ProximityPayload.maximumEncodedSize)-byte limit",
                      hint: "share fewer fields with --fields or a lower --level", status: .dataError)
        case .ownCard: self.init("that is your own card", status: .dataError)
        case .ownSolidarityCard: self.init("that is your own Solidarity card", status: .dataError)
        case .fileTooLarge(let path, let limit):
            self.init("\(path) is larger than \(limit >> 20) MiB", hint: "split the file", status: .dataError)
        case .vcard(let path, let problem): self.init("\(path):\(problem.line): \(problem.description)", status: .dataError)
        case .notOneCard(let path, let count):
            self.init("\(path) holds \(count) cards; your card is filled from one",
                      hint: "export a single contact from your address book", status: .dataError)
        case .nothingToImport(let path):
            self.init("nothing to import: your card already holds every value of \(path)", status: .failure)
        case .unsignedContact(let id, let name):
            self.init("#\(id) \(name) is unsigned: there is no signed card to pass on",
                      hint: "'meishi contacts export' writes it as a vCard", status: .dataError)
        case .storedCardInvalid(let id, let e):
            self.init("the stored card of #\(id) no longer verifies: \(e.reason)", status: .dataError)
        case .card(let e): self.init(e)
        case .payload(let e): self.init(e)
        case .solidarity(let e): self.init(e)
        case .store(let e): self.init(e)
        case .qr(let e): self.init(e)
        case .exchange(let e): self.init(e)
        // scan --camera
        case .camera(let device, .noDevice):
            self.init("no camera at \(device)", hint: "is it plugged in? name another device: meishi scan --camera /dev/video1", status: .noInput)
        case .camera(let device, .noPermission):
            self.init("no permission to open the camera \(device)", hint: "add yourself to its group (usually 'video') and log in again",
                      status: .permission)
        case .camera(let device, .unusable(let why)):
            self.init("cannot read frames from the camera \(device): \(why)", hint: "is it a V4L2 camera, free of other programs?", status: .unavailable)
        case .camera(let device, .ended):
            self.init("the camera \(device) stopped before a card came into view", status: .unavailable)
        case .noCardSeen(let device, let seconds):
            self.init("no card came into view of \(device) within \(seconds) s", hint: "hold the code closer and steadier, or give more --timeout",
                      status: .timedOut)
        }
    }

    /// A card edit or share that was refused.
    init(_ e: CardError) {
        switch e {
        case .invalidFieldName(let n):
            self.init("unknown field \"\(n)\"",
                      hint: "fields are \(FieldName.standard.joined(separator: ", ")) or x-<word>", status: .usage)
        case .notMultiValued(let f):
            self.init("\(f) holds one value", hint: "use 'meishi card set \(f) VALUE' to replace it", status: .usage)
        case .empty(let f): self.init("\(f) cannot be empty", hint: "to remove it: meishi card unset \(f)", status: .dataError)
        case .tooLong(let f, let bytes):
            self.init("\(f) is \(bytes) bytes, more than the \(Card.maximumValueBytes)-byte limit", status: .dataError)
        case .controlCharacter(let f):
            self.init("\(f) contains a control or bidi-override character", status: .dataError)
        case .tooManyValues(let limit): self.init("a card holds at most \(limit) values", status: .dataError)
        case .invalidEmail(let v):
            self.init("\"\(v)\" is not an email address", hint: "expected name@example.org", status: .dataError)
        case .invalidPhone(let v):
            self.init("\"\(v)\" is not a phone number",
                      hint: "digits, spaces, ( ) - . / and an optional leading +, e.g. +81 90 1234 5678", status: .dataError)
        case .invalidURL(let v):
            self.init("\"\(v)\" is not a URL", hint: "include the scheme, e.g. https://\(v)",
                      status: .dataError)
        case .duplicateValue(let f): self.init("your card already has that \(f)", status: .dataError)
        case .noSuchField(let f): self.init("your card has no \(f)", status: .failure)
        case .noSuchValue(let f): self.init("your card has no \(f) with that value", hint: "see 'meishi card show'", status: .failure)
        case .noName: self.init("your card has no name", hint: "meishi card set name \"Your Name\"", status: .dataError)
        case .nameNotShared(let level):
            self.init("your name is not shared at level \(level.rawValue)",
                      hint: "share at a higher --level, or: meishi card set name NAME --level public", status: .dataError)
        case .nameNotSelected:
            self.init("every card carries the name, and --fields leaves it out", hint: "add name to --fields, e.g. --fields name,email",
                      status: .usage)
        }
    }

    /// A payload that did not verify.
    init(_ e: PayloadError) {
        self.init(e.reason, status: .dataError)
    }

    /// A Solidarity card that did not verify; peer text in the reason is escaped for a terminal.
    init(_ e: SolidarityError) {
        let hint: String? = switch e {
        case .expired: "ask them to show a fresh card"
        case .notYetValid, .fromTheFuture: "check this computer's clock"
        default: nil
        }
        self.init(TerminalText.sanitized(e.reason), hint: hint, status: .dataError)
    }

    /// A Solidarity code meishi names but cannot read (exit 65).
    init(_ kind: SolidarityQR.Unsupported) {
        switch kind {
        case .zkProof:
            self.init("a Solidarity zkProof envelope: it is encrypted for the sender's own devices, so no one else can read it",
                      hint: "ask them to show their card as a signed (didSigned) Solidarity QR", status: .dataError)
        case .chunk:
            self.init("one frame (sqc1) of a multi-part Solidarity QR: meishi reads Solidarity cards from a single code only",
                      hint: "ask them to show their card as a signed (didSigned) Solidarity QR", status: .dataError)
        case .openID:
            self.init("an OpenID for Verifiable Presentations request (openid4vp://): meishi does not present credentials",
                      hint: "use --raw to see the request", status: .dataError)
        }
    }

    /// A store failure.
    init(_ e: StoreError) {
        switch e {
        case .notFound(let ref):
            self.init("no contact matches \"\(ref)\"", hint: "see 'meishi contacts list'", status: .noInput)
        case .ambiguous(let ref, let candidates):
            self.init("\"\(ref)\" matches several contacts: "
                      + candidates.joined(separator: "; "),
                      hint: "use the id or the DID", status: .usage)
        case .unavailable(let why):
            self.init("the contact store is unavailable: \(why)", status: .failure)
        case .damaged(let why):
            self.init("the contact store is damaged: \(why)", hint: "delete that contact, or restore meishi.sqlite from a backup",
                      status: .dataError)
        case .nulCharacter(let field):
            self.init("refusing to store a contact whose \(field) holds a NUL character", status: .dataError)
        }
    }

    /// An image or QR failure.
    init(_ e: QRError) {
        switch e {
        case .contentTooLarge(let n):
            self.init("the card (\(n) characters) does not fit in a QR code at this error-correction level",
                      hint: "share fewer fields with --fields, or use --ecc L", status: .dataError)
        case .notAnImage: self.init("not an image meishi can read (PNG, JPEG, PGM or PPM)", status: .dataError)
        case .tooManyPixels(let w, let h, let limit):
            self.init("image is \(w)x\(h) pixels, more than the \(limit / 1_000_000)-megapixel limit", hint: "shrink the image first",
                      status: .dataError)
        case .corruptImage(let why): self.init("corrupt or truncated image: \(why)", status: .dataError)
        case .encoderFailed(let why): self.init("QR encoding failed: \(why)", status: .failure)
        }
    }

    /// An exchange that did not finish.
    init(_ f: ExchangeFailure) {
        let text = ExchangeTransport.describe(f)
        switch f {
        case .ambiguous:
            self.init(text, hint: "agree on a code and run 'meishi exchange --code CODE' on both sides", status: .unavailable)
        case .noPeer:
            self.init(text, hint: "is the other side running 'meishi exchange'? if multicast is blocked, use --listen and --peer HOST:PORT",
                      status: .timedOut)
        case .noSuchInterface(_, let available):
            self.init(text, hint: "interfaces here: \(available.joined(separator: ", "))", status: .usage)
        case .interfaceCannotMulticast(let name):
            self.init(text, hint: name == "lo" ? "on one machine use 'meishi exchange --listen' and '--peer 127.0.0.1', or enable it: ip link set lo multicast on"
                                               : "pick another --interface, or use --listen and --peer HOST", status: .usage)
        case .tooManyGuesses:
            self.init(text, hint: "move somewhere quieter, or use --listen and --peer with the other person's address", status: .protocolError)
        case .addressInUse:
            self.init(text, hint: "is another 'meishi exchange --listen' running? use --port 0 for any free port", status: .unavailable)
        case .unknownHost:
            self.init(text, hint: "check the name, or give the other machine's IP address", status: .noInput)
        case .timedOut: self.init(text + "; nothing was stored", hint: "start both sides within --timeout, or raise it", status: .timedOut)
        case .unreachable: self.init(text, hint: "is 'meishi exchange --listen' running there, and the port open?", status: .unavailable)
        case .declinedLocally, .protocolFailure(.declinedByPeer):
            self.init(text + "; nothing was stored on either side", status: .failure)
        case .protocolFailure(.codesDoNotMatch):
            self.init(text + "; nothing was stored", hint: "check the code with the other person and run both sides again", status: .dataError)
        case .protocolFailure(.codeExpected), .protocolFailure(.codeNotExpected):
            self.init(text + "; nothing was stored", status: .usage)
        case .protocolFailure: self.init(text + "; nothing was stored", status: .dataError)
        case .connectionLost: self.init(text + "; nothing was stored", status: .unavailable)
        case .io: self.init(text, status: .failure)
        }
    }
}

/// `card edit`'s failures: the editor is run by the command itself, not by a service.
extension MeishiFailure {
    static let editCancelled = MeishiFailure("card edit cancelled: the file was empty; your card is unchanged", status: .failure)

    /// A mistake left as it was after the editor reopened with it.
    static func editNotSaved(_ message: String) -> MeishiFailure {
        MeishiFailure("card not saved: \(message)", hint: "run 'meishi card edit' again and fix that line", status: .dataError)
    }

    static func cannotStartEditor(_ editor: String, _ reason: String) -> MeishiFailure {
        MeishiFailure("cannot start the editor \(editor): \(reason)", hint: "set EDITOR", status: .unavailable)
    }

    static func editorFailed(_ editor: String, status: Int32) -> MeishiFailure {
        MeishiFailure("the editor \(editor) failed (exit \(status)); your card is unchanged", status: .failure)
    }

    /// Why a line of the edited card was refused, as the reopened editor shows it.
    static func editLine(_ reason: CardEditText.LineError.Reason) -> String {
        switch reason {
        case .malformed: return "expected FIELD [LEVEL]: VALUE"
        case .unknownLevel(let l): return "unknown level \"\(l)\" (public, professional or personal)"
        case .refused(let e):
            let f = MeishiFailure(e)
            return f.message + (f.hint.map { " (\($0))" } ?? "")
        }
    }
}
