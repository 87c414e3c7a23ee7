import MeishiStore

/// The contact store.
extension MeishiFailure {
    /// A store failure.
    init(_ e: StoreError) {
        switch e {
        case .notFound(let ref):
            self.init("no contact matches \"\(ref)\"", hint: "see 'meishi contacts list'", status: .noInput)
        case .noSuchID(let id):
            self.init("no contact #\(id)", hint: "see 'meishi contacts list' (a number is always an id, never part of a name)",
                      status: .noInput)
        case .emptyReference:
            self.init("an empty contact reference names nobody", hint: "give an id, a DID or a name", status: .usage)
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
        case .nothingToSplit(let id, let name, .neverMerged):
            self.init("nothing to split: #\(id) \(Console.safe(name ?? "(no name)")) was never merged", status: .dataError)
        case .nothingToSplit(let id, let name, .allUndone(let count)):
            self.init("nothing to split: #\(id) \(Console.safe(name ?? "(no name)")) holds no merge any more "
                      + (count == 1 ? "(the one merge into it was undone)" : "(all \(count) merges into it were undone)"),
                      status: .dataError)
        case .nothingToSplit(let id, let name, .unrecorded):
            self.init("nothing to split: no merge into #\(id) \(Console.safe(name ?? "(no name)")) is recorded, but an older "
                      + "version of meishi, which did not record merges, may have merged cards into it",
                      hint: "if it mixes several cards, delete it (meishi contacts delete \(id)) and import the original files again",
                      status: .dataError)
        case .superseded(let did, let newDID, let at, let id):
            self.init("this card is superseded: its key \(Console.safe(did)) was replaced on \(CardRendering.day(at)) by "
                      + "\(Console.safe(newDID)) (contact #\(id)); nothing was stored",
                      hint: "see 'meishi contacts show \(id)'; a card signed by the old key may come from whoever holds it now",
                      status: .dataError)
        }
    }

    static let notDeleted = MeishiFailure("nothing deleted", status: .failure)
    /// Ctrl-D at the question: no answer is a no (trial 7, F10).
    static let notDeletedUnanswered = MeishiFailure("nothing deleted (no answer: end of input)", status: .failure)
}

/// Living cards (issue 26): meetings' events and my own words about a contact.
extension MeishiFailure {
    /// An event name that cannot be recorded (`--event`, MEISHI_EVENT).
    static func badEvent(_ source: String) -> String {
        "\(source) must be 1 to \(Meeting.maximumEventBytes) bytes of text on one line"
    }

    static let emptyOwnNote = "the note is empty: to remove it, use --delete"
    static let tooManyTags = "a contact holds at most \(PrivateNotes.maximumTags) tags; nothing was added"
    static let ownNotesUnchanged = "your note and tags are unchanged"
    /// `contacts edit` saved over a note or tags that another command changed while the editor was open.
    static func ownNotesChangedWhileEditing(note: Bool, tags: Bool, kept path: String) -> MeishiFailure {
        let what = note == tags ? "note and tags" : note ? "note" : "tags"
        return MeishiFailure("your \(what) on this contact changed while the editor was open: "
                             + "your edit was not saved, so as not to undo that change; the edited text is kept in \(Console.safe(path))",
                             hint: "run 'meishi contacts edit' again and copy your changes from that file", status: .cardChanged)
    }
    static let ownNotesEditCancelled = MeishiFailure("contacts edit cancelled: the file was empty; \(ownNotesUnchanged)", status: .failure)

    /// A mistake left as it was after the editor reopened with it.
    static func ownNotesNotSaved(_ message: String) -> MeishiFailure {
        MeishiFailure("note and tags not saved: \(message)", hint: "run 'meishi contacts edit' again and fix that line", status: .dataError)
    }
}
