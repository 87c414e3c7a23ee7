import MeishiCard
import MeishiKit

/// Cards: yours (edits, shares, imports), the payloads and Solidarity cards of others.
extension MeishiFailure {
    /// Your card and the cards of others (`init(_: MeishiError)` routes them here).
    init(card e: MeishiError) {
        switch e {
        case .cardFileDamaged(let path, let reason):
            self.init("\(path) is damaged: \(reason)", hint: "fix or remove the file", status: .dataError)
        case .cardFileRefused(let path, let refused):
            self.init("\(path) is damaged: it holds what 'meishi card set' refuses: \(MeishiFailure(refused).message)",
                      hint: "fix or remove the file", status: .dataError)
        case .shareTooLarge(let bytes):
            self.init("the signed card would be \(bytes) bytes, over the \(ProximityPayload.maximumEncodedSize)-byte limit",
                      hint: "share fewer fields with --fields or a lower --level", status: .dataError)
        case .ownCard: self.init("that is your own card", status: .dataError)
        case .ownSolidarityCard: self.init("that is your own Solidarity card", status: .dataError)
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
        default: preconditionFailure("not a card failure: \(e)")
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
        case .notAWebAddress(let v):
            let scheme = v.prefix { $0 != ":" }.lowercased()
            self.init("\"\(v)\" is not a web address: a url on your card starts with http:// or https://",
                      hint: scheme == "mailto" ? "an email address goes in the email field: meishi card add email \(v.dropFirst(7))"
                          : scheme == "tel" ? "a phone number goes in the phone field: meishi card add phone \(v.dropFirst(4))"
                          : "a phone or address book would open it as a link; give a web page instead, as https://example.org",
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

    /// A Solidarity card that did not verify; peer text in the reason stays as it came (`Console` escapes it for a terminal, `JSONText` for JSON).
    init(_ e: SolidarityError) {
        let hint: String? = switch e {
        case .expired: "ask them to show a fresh card"
        case .notYetValid, .fromTheFuture: "check this computer's clock"
        default: nil
        }
        self.init(e.reason, hint: hint, status: .dataError)
    }
}

/// Trial 7, F10: Ctrl-D at "Remove which?" (`card unset`, `card set`).
extension MeishiFailure {
    static let noValueChosen = MeishiFailure("no value chosen (end of input): your card is unchanged", status: .failure)
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

/// Issue 21 (second pass): `card edit` against a card changed meanwhile.
extension MeishiFailure {
    /// `card edit` saved over a card that another command changed while the editor was open.
    static func cardChangedWhileEditing(_ fields: [FieldName], kept path: String) -> MeishiFailure {
        let what = fields.map(\.rawValue).joined(separator: ", ")
        return MeishiFailure("your card changed while the editor was open (\(what)): your edit was not saved, so as not to undo that change; "
                             + "the edited text is kept in \(Console.safe(path))",
                             hint: "run 'meishi card edit' again and copy your changes from that file", status: .cardChanged)
    }
}

/// Trial 7, F12: an edit that makes a share too big to carry.
extension MeishiFailure {
    static func shareWouldNotFit(level: DisclosureLevel, bytes: Int) -> MeishiFailure {
        MeishiFailure("with this value your card's \(level.rawValue) share would be \(bytes) bytes signed, over the "
                      + "\(ProximityPayload.maximumEncodedSize)-byte limit of a share; your card is unchanged",
                      hint: "use a shorter value, or make room with 'meishi card unset'", status: .dataError)
    }
}

/// Several files or refs in one command (issue 27: contacts add A B…, contacts delete 2 5…).
extension MeishiFailure {
    /// One of several card files did not verify (or is the user's own): none was stored.
    static func noneAdded(_ failure: MeishiFailure, file: String, of count: Int) -> MeishiFailure {
        var located = failure.located(file)
        located.message += " (none of the \(count) cards was added)"
        return located
    }
}
