import Foundation
import MeishiCard
import MeishiCrypto
import MeishiKeyring
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
        case .cannotWrite(let path, let reason):
            self.init("cannot write \(path): \(reason)", hint: SecureFile.isDirectory(path) ? "name a file inside it: -o \(path)/NAME" : nil,
                      status: .failure)
        case .alreadyExists(let path): self.init("\(path) already exists", status: .failure)
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
        case .noIdentity(let home):
            self.init("no identity in \(home)", hint: "run 'meishi init' to create one there, or check --home and MEISHI_HOME",
                      status: .noInput)
        case .identityExists(let home):
            self.init("an identity already exists in \(home)",
                      hint: "use 'meishi init --force' to replace it (the old key is kept as a backup)", status: .failure)
        case .notABackup(let path):
            self.init("\(path) is not a meishi identity backup", hint: "'meishi id export' writes one", status: .dataError)
        case .notAHomeBackup(let path):
            self.init("\(path) is not a meishi home backup",
                      hint: "'meishi backup' writes one; an identity backup from 'meishi id export' is restored with 'meishi init --restore'",
                      status: .dataError)
        case .homeBackupDamaged(let path):
            self.init("\(path) is damaged: it opened, but does not hold a meishi home", hint: "use another copy", status: .dataError)
        case .homeNotEmpty(let path, let holds):
            let shown = holds.prefix(4).joined(separator: ", ") + (holds.count > 4 ? ", …" : "")
            self.init("\(path) is not empty (\(shown)): a home is restored only into an empty directory",
                      hint: "restore into a new home with --home DIR, or move \(path) away first", status: .cannotCreate)
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
        case .passphrasesDiffer:
            self.init("the passphrases do not match; nothing was changed", hint: "type the same passphrase twice", status: .permission)
        // The seal cannot tell a wrong passphrase from a damaged (cut short, altered) file.
        case .wrongPassphrase(let path): self.init("wrong passphrase for \(path), or the file is damaged", status: .permission)
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
            self.init("\(path) is larger than \(Self.size(limit)), the most meishi reads there",
                      hint: limit < 1 << 20 ? "is it the right file?" : "split the file", status: .dataError)
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
        // Messages (send, listen, inbox)
        case .cannotMessage(let id, let name, .unsigned):
            self.init("#\(id) \(name) is an unsigned contact: a message needs the key of a signed card",
                      hint: "swap cards with 'meishi exchange' first", status: .dataError)
        case .cannotMessage(let id, let name, .noKey):
            self.init("#\(id) \(name) has no message key on their card", hint: "swap cards with 'meishi exchange' again", status: .dataError)
        case .cannotMessage(_, let did, .yourself):
            self.init("\(did) is your own identity: a note goes to a contact", hint: "list your contacts with 'meishi contacts list'",
                      status: .usage)
        case .messageText(let e): self.init(e)
        case .delivery(let e): self.init(e)
        // scan --camera
        case .camera(let device, .noDevice):
            self.init("no camera at \(device)", hint: "is it plugged in? name another device: meishi scan --camera "
                      + (device == "/dev/video1" ? "/dev/video0" : "/dev/video1"), status: .noInput)
        case .camera(let device, .noPermission):
            self.init("no permission to open the camera \(device)", hint: "add yourself to its group (usually 'video') and log in again",
                      status: .permission)
        case .camera(let device, .notAVideoDevice):
            self.init("\(device) is not a video device", hint: "name a camera, such as /dev/video0 ('ls /dev/video*' lists them)",
                      status: .noInput)
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
                      hint: "digits, spaces, ( ) - . / and an optional leading +, e.g. +81 90 1234 5678 (an extension: ext 12)",
                      status: .dataError)
        case .invalidURL(let v):
            self.init("\"\(v)\" is not a URL", hint: "include the scheme, e.g. https://\(v)",
                      status: .dataError)
        case .duplicateValue(let f):
            self.init("your card already has that \(f)", hint: "to change its level: meishi card add \(f) VALUE --level LEVEL",
                      status: .dataError)
        case .noSuchField(let f): self.init("your card has no \(f)", status: .failure)
        case .noSuchValue(let f): self.init("your card has no \(f) with that value", hint: "see 'meishi card show'", status: .failure)
        case .severalValues(let f, let values):
            self.init("your card has \(values.count) \(f) values: " + values.map { "\"\($0)\"" }.joined(separator: ", "),
                      hint: "name the one to remove: meishi card unset \(f) VALUE", status: .usage)
        case .severalValuesToReplace(let f, let values):
            self.init("your card has \(values.count) \(f) values: " + values.map { "\"\($0)\"" }.joined(separator: ", ")
                      + "; 'card set' would replace them all",
                      hint: "name the one to replace with --replace VALUE; add another with 'meishi card add \(f) VALUE', "
                      + "or remove one with 'meishi card unset \(f) VALUE'", status: .usage)
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
        case .noRecordedMerge(let id, let name):
            self.init("cannot split #\(id) \(Console.safe(name ?? "(no name)")): no merge into it is recorded, so the store cannot "
                      + "tell which of its values came from which card",
                      hint: "merges made before meishi recorded them cannot be undone: delete the contact (meishi contacts delete \(id)) "
                      + "and import the original files again; cards of different names no longer merge",
                      status: .dataError)
        }
    }

    /// An image or QR failure.
    init(_ e: QRError) {
        switch e {
        case .contentTooLarge(let n):
            self.init("the card (\(n) characters) does not fit in a QR code at this error-correction level",
                      hint: "share fewer fields with --fields, or use --ecc L", status: .dataError)
        case .notAnImage: self.init("not an image meishi can read: it reads PNG, JPEG, WebP, PGM and PPM", hint: MeishiFailure.otherImageFormat,
                                    status: .dataError)
        case .tooManyPixels(let w, let h, let limit):
            self.init("image is \(w)x\(h) pixels, more than the \(limit / 1_000_000)-megapixel limit", hint: "shrink the image first",
                      status: .dataError)
        case .corruptImage(let why): self.init("corrupt or truncated image: \(why)", status: .dataError)
        case .tooCostly(let why):
            self.init("refusing to decode the image: \(why)", hint: "save it again as a PNG or a baseline (not progressive) JPEG",
                      status: .dataError)
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

    /// Ctrl-C (or Ctrl-\) ended the editor, or meishi was told to stop (SIGTERM, SIGHUP) and passed it on.
    static func editorInterrupted(_ editor: String) -> MeishiFailure {
        MeishiFailure("the editor \(editor) was interrupted; your card is unchanged", status: .failure)
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

extension MeishiFailure {
    /// `16 KiB`, `8 MiB`, or bytes.
    static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}

/// Command-line mistakes: a word that names no command, a usage error from argument parser.
extension MeishiFailure {
    static func unknownCommand(_ word: String, under path: [String], suggestions: [String]) -> MeishiFailure {
        let under = (["meishi"] + path).joined(separator: " ")
        let hint = suggestions.isEmpty ? "see '\(under) --help' for the commands"
            : "did you mean " + suggestions.map { "'\(under) \($0)'" }.joined(separator: " or ") + "?"
        return MeishiFailure("'\(word)' is not a command of '\(under)'", hint: hint, status: .usage)
    }

    static let durationForms = "a duration is a whole number with s, m, h or d, as in 90s, 10m, 24h or 7d (a bare number is seconds)"

    /// argument parser's message, lowercased, with a pointer to the command's help.
    static func usage(_ text: String, command: [String], status: ExitStatus) -> MeishiFailure {
        var message = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let first = message.first { message = first.lowercased() + message.dropFirst() }
        let help = "see '\((["meishi"] + command).joined(separator: " ")) --help'"
        // "The value 'x' is invalid for '--trust <trust>'. Please provide one of 'a', 'b' or 'c'." → one line and a hint.
        if let m = message.firstMatch(of: /^the value '(.*)' is invalid for '(-[^ ']+)[^']*'\. Please provide one of (.*)\.$/) {
            return MeishiFailure("\(m.2) cannot be '\(m.1)'", hint: "choose one of \(m.3)", status: status)
        }
        if let m = message.firstMatch(of: /^the value '(.*)' is invalid for '(-[^ ']+) <duration>'$/) {
            return MeishiFailure("\(m.2) cannot be '\(m.1)'", hint: durationForms, status: status)
        }
        return MeishiFailure(message, hint: help, status: status)
    }
}

/// `card qr` and `contacts share --qr`.
extension MeishiFailure {
    static func unknownQRExtension(_ path: String) -> MeishiFailure {
        MeishiFailure("cannot tell the QR format from \(path): meishi writes .png, .svg and .txt",
                      hint: "name the file card.png, card.svg or card.txt, or pass --format", status: .usage)
    }

    static func invertNeedsTerminal(_ format: String) -> MeishiFailure {
        MeishiFailure("--invert is for the terminal QR; a \(format) file is always dark on light",
                      hint: "leave out --invert", status: .usage)
    }

    static func qrTooLarge(characters: Int, correction: QRErrorCorrection) -> MeishiFailure {
        MeishiFailure("the card (\(characters) characters) does not fit in a QR code at ECC \(correction.rawValue)",
                      hint: correction == .L ? "share less: --level public, or fewer fields with --fields name,email"
                                             : "share less with --level public or --fields name,email, or use --ecc L",
                      status: .dataError)
    }

    /// How a share could be made smaller: nothing when it is public with chosen fields already.
    static func shareLess(level: DisclosureLevel, fieldsChosen: Bool) -> String? {
        level > .public ? "share less with --level public or --fields name,email"
            : fieldsChosen ? nil : "share fewer fields with --fields name,email"
    }

    /// `shareLess`: how the share could be smaller, if it can.
    /// `file`: the way to a file instead (a picture for `card qr`, the signed card for `contacts share`).
    static func qrDoesNotFit(version: Int, columns: Int, rows: Int, terminalColumns: Int, terminalRows: Int?,
                             shareLess: String?, file: String = "write a picture: -o card.png") -> MeishiFailure {
        MeishiFailure("the QR (version \(version)) needs \(columns)x\(rows) characters; this terminal has "
                      + "\(terminalColumns)x\(terminalRows.map(String.init) ?? "?"), and a code cut or wrapped does not scan",
                      hint: "enlarge the terminal (or a smaller font) to \(columns)x\(rows)"
                        + (shareLess.map { ", \($0)," } ?? ",")
                        + " or " + file,
                      status: .usage)
    }
}

/// Notes on the way: waiting for input, a code that is not a card beside one that is.
extension MeishiFailure {
    static func waitingForStandardInput(_ what: String, example: String = "meishi scan - < photo.png") -> String {
        "waiting for \(what) on standard input (Ctrl-D ends it; e.g. \(example))"
    }

    static func otherCodeBesideCard(file: String, text: String) -> String {
        let preview = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return "\(file): also holds a QR code that is not a card, left alone: \"\(Console.safe(preview))\""
    }
}

/// Lines printed under tables.
extension MeishiFailure {
    /// After the first `card set name`: what to do next.
    /// `meishi` as the person runs it: with `--home DIR` when they gave one.
    static func meishi(_ home: String?) -> String {
        guard let home else { return "meishi" }
        return "meishi --home " + (home.contains(where: { " '\"$\\".contains($0) }) ? "'\(home.replacingOccurrences(of: "'", with: "'\\''"))'" : home)
    }

    static func nextAfterName(_ home: String?) -> String {
        let m = meishi(home)
        return """
            next: \(m) card add email you@example.org   (then: \(m) card show)
            then: \(m) exchange with someone nearby, or \(m) card qr to show your card
            """
    }

    static func nextAfterInit(_ home: String?) -> String { "next: \(meishi(home)) card set name \"Your Name\"" }

    static let flaggedLegend = "! possible impersonation: came after another contact with the same name or email (see 'meishi contacts show ID')"
}

/// Possible impersonation, naming the newcomer.
extension MeishiFailure {
    /// `who` (just stored) is the newcomer.
    static func impersonating(who: String, other: Contact, sharing: String) -> String {
        "\(who) uses the same \(sharing) as contact #\(other.id ?? 0) (\(other.did)) under a different key: possible impersonation"
    }

    /// More look-alikes of `who` (#`id`) than are warned about one by one (`n` or more: a
    /// contact records the first `ContactStore.maximumLookAlikes`).
    static func moreLookAlikes(_ n: Int, of who: String, id: Int64) -> String {
        "\(who) (#\(id)) also shares its name or email with \(n) or more other contacts: see 'meishi contacts show \(id)'"
    }

    /// The stored `other` came later than `who` (#`id`) and uses its name: `other` is the newcomer.
    static func impersonatedBy(other: Contact, of who: String, id: Int64, sharing: String) -> String {
        "contact #\(other.id ?? 0) \(Console.safe(other.name ?? other.did)) (\(other.did)), stored later, uses the same \(sharing) as "
            + "\(who) (#\(id)) under a different key: #\(other.id ?? 0) may be impersonating them"
    }
}

/// `contacts export`'s notes.
extension MeishiFailure {
    /// Kept properties of `contact` that a vCard cannot hold.
    static func exportDropped(_ contact: Contact, _ omissions: [VCardOmission]) -> String {
        let binary = omissions.filter { $0.reason == .binaryAsText }.map(\.property)
        let second = omissions.filter { $0.reason == .second }.map(\.property)
        var why: [String] = []
        if !binary.isEmpty { why.append("\(binary.joined(separator: ", ")) (binary data an earlier meishi imported as text)") }
        if !second.isEmpty { why.append("a second \(second.joined(separator: ", ")) (a vCard holds one; the store keeps both)") }
        return "#\(contact.id ?? 0) \(CardRendering.name(contact.name)): left out " + Console.safe(why.joined(separator: " and "))
    }
}

/// Passphrases and the identity's key files.
extension MeishiFailure {
    /// Passphrases a person at a terminal may try on one key.
    static let passphraseTries = 3
    /// Shorter new passphrases get a warning.
    static let shortPassphrase = 8

    static func passphrasePrompt(_ path: String, attempt: Int) -> String {
        attempt == 1 ? "passphrase for \(path): " : "wrong passphrase, try again (\(attempt) of \(passphraseTries)): "
    }

    /// The agent could not keep a key (the unlock itself worked).
    static func cannotRemember(_ failure: SessionKeyring.Failure) -> String {
        switch failure {
        case .unavailable(let e):
            "the passphrase is not remembered: no session keyring (\(String(cString: strerror(e)))); it will be asked again"
        case .refused(let e):
            "the passphrase is not remembered: the kernel refused the key (\(String(cString: strerror(e)))); it will be asked again"
        }
    }

    static func passphraseIsShort(_ characters: Int) -> String {
        "the passphrase has \(characters) character\(characters == 1 ? "" : "s"); \(shortPassphrase) or more, or a few words, resist guessing far better"
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

    /// `id export -o FILE` where FILE exists: it may be the only copy of another key.
    static func homeBackupFileExists(_ path: String) -> MeishiFailure {
        MeishiFailure("\(path) already exists: a backup is never written over a file", hint: "choose another file name",
                      status: .cannotCreate)
    }
    static let binaryToTerminal = MeishiFailure("refusing to write an encrypted backup to a terminal",
                                                hint: "name a file with -o FILE, or redirect standard output", status: .usage)
    static func backupFileExists(_ path: String) -> MeishiFailure {
        MeishiFailure("\(path) already exists: a backup may be the only copy of a key, so it is not overwritten",
                      hint: "choose another file name, or pass --force to replace it", status: .cannotCreate)
    }
    static let notEncrypted = MeishiFailure("the secret key has no passphrase", hint: "meishi passphrase set", status: .usage)

    static let identityFileNotACard = "that is a meishi identity file (or backup), not a card: 'meishi card export' writes your card"

    static let notDeleted = MeishiFailure("nothing deleted", status: .failure)

    static let newPassphraseNeeded = MeishiFailure("MEISHI_PASSPHRASE is the current passphrase; the new one is missing",
                                                   hint: "set MEISHI_NEW_PASSPHRASE too, or run it on a terminal", status: .usage)
    static let standardInputNotText = MeishiFailure("standard input is not UTF-8 text", status: .dataError)
    static let samePassphrase = MeishiFailure("the new passphrase is the current one: nothing changed",
                                              hint: "choose another passphrase", status: .usage)
}

extension MeishiFailure {
    /// An empty file, or nothing on standard input.
    static func emptyInput(_ file: String) -> MeishiFailure {
        file == "-" ? MeishiFailure("nothing arrived on standard input", hint: "pipe an image in: meishi scan - < photo.png", status: .noInput)
                    : MeishiFailure("\(file) is empty", status: .dataError)
    }
}

/// Ephemeral messages: a note refused before sending, and a delivery that failed.
extension MeishiFailure {
    /// A note on standard input longer than could be read (its size is not known).
    static let noteOverLimit = MeishiFailure("the note on standard input is over the \(MessageEnvelope.maximumTextBytes)-byte limit",
                                             hint: "shorten it, or send a link to the rest", status: .dataError)

    init(_ e: MessageEnvelopeError) {
        switch e {
        case .textTooLong(let n):
            self.init("the note is \(n) bytes, over the \(MessageEnvelope.maximumTextBytes)-byte limit",
                      hint: "shorten it, or send a link to the rest", status: .dataError)
        case .emptyText: self.init("the note is empty", status: .dataError)
        case .nulCharacter: self.init("the note holds a NUL character", status: .dataError)
        case .badLifetime(let s): self.init("a message lives 1 s to 7 days, not \(s) s", hint: "pass --ttl 1h, 24h or 7d", status: .usage)
        case .tooLarge(let n): self.init("the message is \(n) bytes, over the \(MessageEnvelope.maximumSize)-byte limit", status: .dataError)
        case .malformed(let why): self.init("not a meishi message: \(why)", status: .dataError)
        case .authenticationFailed: self.init("the message does not open: not sealed by its sender for you", status: .dataError)
        }
    }

    /// `--peer HOST:PORT` whose port is a number but not a port.
    static func peerPortOutOfRange(_ port: Int) -> String {
        port == 0 ? "--peer needs the other side's port, 1 to 65535, not 0 (port 0 means 'any free port' only when listening)"
                  : "--peer port must be 1 to 65535, not \(port)"
    }

    /// Nothing answered at `send --peer`: the multicast hint would not help.
    static func notDeliveredToPeer(_ why: String) -> MeishiFailure {
        MeishiFailure(MessageDeliveryFailure.notDelivered(why).description,
                      hint: "is 'meishi listen' running there, on that port? it prints its port when it starts", status: .notDelivered)
    }

    init(_ f: MessageDeliveryFailure) {
        let text = f.description
        switch f {
        case .notDelivered:
            self.init(text, hint: "is 'meishi listen' running on the other machine? where multicast is blocked, use --peer HOST:PORT",
                      status: .notDelivered)
        case .refused(.unknownSender), .refused(.unsignedSender):
            self.init(text, hint: "they need your signed card first: swap cards with 'meishi exchange'", status: .dataError)
        case .refused(.expired): self.init(text, hint: "check this computer's clock", status: .dataError)
        case .refused: self.init(text, status: .dataError)
        case .handshakeFailed: self.init(text, hint: "someone else may be listening at that address", status: .protocolError)
        case .unknownHost: self.init(text, hint: "check the name, or give the other machine's IP address", status: .noInput)
        case .addressInUse: self.init(text, hint: "is another 'meishi listen' running? use --port 0 for any free port", status: .unavailable)
        case .io: self.init(text, status: .failure)
        }
    }
}

/// The words of the common-friends phase (`meishi exchange`) and of `meishi friends`.
enum FriendsWording {
    static let neverCompared = "never compared: no exchange with it ran a common-friends comparison"
    static let neverComparedShort = "never compared"
    static let neverComparedLegend = "never compared: added by QR, file or import, or no exchange with it compared contacts"

    /// "Common friends (2): Cleo Park, Dev Rao", or "Common friends: none", in my names for them.
    static func list(_ friends: [Contact]) -> String {
        guard !friends.isEmpty else { return "Common friends: none" }
        // Ids where two friends share a name (or one is a flagged look-alike), so they can be told apart.
        let names = friends.map { CardRendering.name($0.name) }
        return "Common friends (\(friends.count)): " + zip(friends, names).map { c, n in
            names.filter { $0 == n }.count > 1 || !CardRendering.lookAlikeMark(c).isEmpty
                ? "\(n) (#\(c.id ?? 0)\(CardRendering.lookAlikeMark(c)))" : n
        }.joined(separator: ", ")
    }

    static func json(_ c: Contact) -> JSONValue {
        .object(["id": .number(Double(c.id ?? 0)), "name": c.name.map(JSONValue.string) ?? .null, "did": .string(c.did)])
    }

    /// "2 common friends (ecdh; 1 deleted since; may be out of date)", a line of `meishi friends`.
    static func count(_ n: Int, mode: String?, deletedSince: Int, seenSince: Bool) -> String {
        "\(n) common friend\(n == 1 ? "" : "s") (\(mode ?? "?")" + (deletedSince > 0 ? "; \(deletedSince) deleted since" : "")
            + (seenSince ? "; may be out of date" : "") + ")"
    }

    /// Found by the comparison, deleted since: re-adding does not bring them back.
    static func deletedSince(_ n: Int) -> String {
        "\(n) more \(n == 1 ? "was" : "were") found then but deleted from your contacts since "
            + "(re-adding does not bring \(n == 1 ? "it" : "them") back: exchange again to compare anew)"
    }

    /// The last exchange with the contact skipped the comparison: the list is older than it.
    static func seenSince(_ lastSeen: Int64) -> String {
        "seen again on \(CardRendering.date(lastSeen)) without a comparison: this list may be out of date"
    }

    /// Why the comparison did not run; the other side says the mirror image.
    static func skipped(_ why: CommonFriendsSkip) -> String {
        switch why {
        case .offHere: "not compared: --friends off"
        case .offByPeer: "not compared: the other side uses --friends off"
        case .unauthenticatedHere:
            "not compared: nobody compared the code here (--yes); compare the code or use --code to compare contacts"
        case .unauthenticatedByPeer:
            "not compared: nobody compared the code on the other side (--yes there); compare it or use --code"
        case .ourSetTooLarge(let n, let limit):
            "not compared: your set of \(n) (contacts, and their emails and phones with --match) exceeds the other side's --max-set \(limit)"
        case .peerSetTooLarge(let n, let limit):
            "not compared: the other side's set of \(n) (contacts, and their emails and phones with --match) exceeds --max-set \(limit)"
        }
    }

    static func failed(_ e: CommonFriendsError) -> String {
        "not compared: \(e.description); the card exchange itself completed"
    }
}

/// The words of the message phase of `meishi exchange` (`--message`).
enum MessageWording {
    static func report(_ m: ExchangeMessageOutcome, peer: String, _ out: Console) {
        if m.withheld {
            out.line("Message not sent: nobody compared the code here (--yes); send it later with 'meishi send'")
        }
        switch m.sent {
        case .stored?: out.line("Message delivered to \(peer)")
        case .duplicate?: out.line("Message delivered to \(peer) (they had it already)")
        case .refused(let reason)?: out.line("Message not delivered: \(reason.description)")
        case nil: break
        }
        switch m.received {
        case .stored?, .duplicate?: out.line("Message from \(peer): read it with 'meishi inbox'")
        case .refused(let reason)?: out.line("A message from \(peer) was refused: \(reason.description)")
        case nil: break
        }
        if let failure = m.failure { out.line("Messages: \(describe(failure)); the card exchange itself completed") }
    }

    static func describe(_ f: ExchangeMessageFailure) -> String {
        switch f {
        case .notSealed(let why): "our message could not be sealed (\(why))"
        case .protocolViolation(let e): e.description
        case .connectionLost(let why): why
        }
    }

    static func json(_ m: ExchangeMessageOutcome) -> JSONValue {
        func verdict(_ v: MessageVerdict?) -> JSONValue {
            switch v {
            case .stored?: .string("stored")
            case .duplicate?: .string("duplicate")
            case .refused?: .string("refused")
            case nil: .null
            }
        }
        func reason(_ v: MessageVerdict?) -> JSONValue {
            if case .refused(let r)? = v { return .string(r.description) }
            return .null
        }
        return .object([
            "sent": m.withheld ? .string("withheld") : verdict(m.sent),
            "sentReason": m.withheld ? .string("nobody compared the code here (--yes)") : reason(m.sent),
            "id": m.sentEnvelope.map { .string(Base64URL.encode($0.id)) } ?? .null,
            "received": verdict(m.received), "receivedReason": reason(m.received),
            "failure": m.failure.map { .string(describe($0)) } ?? .null,
        ])
    }
}

// MARK: Several files or refs in one command (issue 27: contacts add A B…, contacts delete 2 5…)

extension MeishiFailure {
    /// One of several card files did not verify (or is the user's own): none was stored.
    static func noneAdded(_ failure: MeishiFailure, file: String, of count: Int) -> MeishiFailure {
        var located = failure.located(file)
        located.message += " (none of the \(count) cards was added)"
        return located
    }
}

extension MeishiFailure {
    /// The hint for a picture in a format `scan` does not read (HEIC, GIF, BMP, TIFF, AVIF…).
    static let otherImageFormat = "save it as PNG or JPEG first (a screenshot of it works too)"
}
