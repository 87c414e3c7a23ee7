import ArgumentParser
import MeishiCard
import MeishiKit
import MeishiText
import MeishiStore

struct ContactsNote: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "note", abstract: "Write your own note about a contact (kept here, never shared).",
        discussion: """
            The note is yours: it stays in this home, is never part of a card, a share, a QR code or a \
            push, and leaves only with 'contacts export --with-notes' (as a vCard NOTE) and in a backup. \
            Without TEXT, prints the note. TEXT replaces the note ('-' reads it from standard input); \
            --delete removes it. At most 8192 bytes; line breaks and tabs are kept.

            Examples:
              meishi contacts note ken "met at the booth; wants the slides"
              meishi contacts note ken
              meishi contacts note ken --delete
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Argument(help: ArgumentHelp("The note, or - for standard input.", valueName: "text"))
    var text: String?

    @Flag(help: "Remove the note.")
    var delete = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if delete, text != nil { throw ValidationError("--delete takes no TEXT") }
        if let text, text != "-" {
            if text.allSatisfy(\.isWhitespace) { throw ValidationError(MeishiFailure.emptyOwnNote) }
            if let problem = PrivateNotes.problem(note: text) { throw ValidationError(problem) }
        }
    }

    func run(_ ctx: Context) throws {
        let contacts = try global.session(ctx).contacts
        let (contact, notes) = try contacts.privateNotes(ref)
        var updated = notes
        if delete {
            updated.note = nil
        } else if let text {
            updated.note = try text == "-" ? readStandardInput(ctx) : text
        }
        if updated != notes { updated = try contacts.setPrivateNotes(updated, of: contact) }
        let title = "\(CardRendering.name(contact.name)) (#\(contact.id ?? 0))"
        if json {
            return ctx.out.json(.object(["id": .number(Double(contact.id ?? 0)), "note": updated.note.map(JSONValue.string) ?? .null]))
        }
        switch (updated.note, delete || text != nil) {
        case (nil, true) where notes.note == nil: ctx.out.note("no note on \(title): nothing to remove")
        case (nil, true): ctx.out.line("removed your note on \(title)")
        case (nil, false): ctx.out.note("no note on \(title): add one with meishi contacts note \(contact.id ?? 0) TEXT")
        case (let note?, true): ctx.out.line("saved your note on \(title) (\(note.count) characters; never shared)")
        case (let note?, false): ctx.out.line(note.split(separator: "\n", omittingEmptySubsequences: false).map { Console.safe(String($0)) }.joined(separator: "\n"))
        }
    }

    private func readStandardInput(_ ctx: Context) throws -> String {
        if ctx.terminal.isInteractive { ctx.out.note(Context.waitingForStandardInput("the note", example: "echo hi | meishi contacts note ken -")) }
        let limit = PrivateNotes.maximumNoteBytes + 1
        let bytes = try ctx.readStandardInput(limit)
        guard let s = String(validating: bytes.prefix(limit), as: UTF8.self) else { throw MeishiFailure.standardInputNotText }
        let note = s.hasSuffix("\n") ? String(s.dropLast()) : s
        if note.allSatisfy(\.isWhitespace) { throw MeishiFailure(MeishiFailure.emptyOwnNote, status: .usage) }
        if let problem = PrivateNotes.problem(note: note) { throw MeishiFailure(problem, status: .dataError) }
        return note
    }
}

struct ContactsTag: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag", abstract: "Tag a contact (your own tags: kept here, never shared).",
        discussion: """
            Adds the tags to the contact (--untag: removes them); 'contacts list --tag TAG' lists the \
            contacts with one. Tags are compared ignoring case; a tag holds no comma. Like notes, tags \
            leave this home only with 'contacts export --with-notes' (as vCard CATEGORIES) and in a backup.

            Examples:
              meishi contacts tag ken pycon investor
              meishi contacts tag ken --untag investor
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    @Argument(help: ArgumentHelp("Tags to add (with --untag: to remove).", valueName: "tag"))
    var tags: [String] = []

    @Flag(help: "Remove the tags instead.")
    var untag = false

    @Flag(help: "Print the result as JSON.")
    var json = false

    func validate() throws {
        if tags.isEmpty { throw ValidationError("name at least one tag, as in: meishi contacts tag \(ref) pycon") }
        for tag in tags {
            // An empty tag has nothing to quote: "a tag cannot be empty", no colon after it.
            if let problem = PrivateNotes.problem(tag: tag) {
                throw ValidationError(problem + (tag.trimmingCharacters(in: .whitespaces).isEmpty ? "" : ": " + TerminalText.sanitized(tag)))
            }
        }
    }

    func run(_ ctx: Context) throws {
        let contacts = try global.session(ctx).contacts
        let trimmed = tags.map { $0.trimmingCharacters(in: .whitespaces) }
        let (found, before) = try contacts.privateNotes(ref)
        if !untag, Set((before.tags + trimmed).map { $0.lowercased() }).count > PrivateNotes.maximumTags {
            throw MeishiFailure(MeishiFailure.tooManyTags, status: .usage)
        }
        let (contact, now) = try contacts.tag(String(found.id ?? 0), trimmed, removing: untag)
        if json {
            return ctx.out.json(.object(["id": .number(Double(contact.id ?? 0)), "tags": .array(now.map(JSONValue.string))]))
        }
        ctx.out.line("\(CardRendering.name(contact.name)) (#\(contact.id ?? 0)): "
                     + (now.isEmpty ? "no tags" : "tags " + now.map(Console.safe).joined(separator: ", ")))
    }
}

struct ContactsEdit: SynchronousCommand {
    static let configuration = CommandConfiguration(
        commandName: "edit", abstract: "Edit your own note and tags on a contact in $VISUAL or $EDITOR.",
        discussion: """
            Opens a 'tags:' line and a 'note:' line followed by the note. On save they are checked like \
            'contacts tag' and 'contacts note'; on a mistake the editor opens again with the error at the \
            top. Saving an empty file, or leaving a mistake unchanged, keeps them as they were. If \
            another command changed the note or tags while the editor was open, nothing is saved: \
            meishi says which changed, keeps your text in its file (contact-notes-edit-XXXXXX.txt in \
            the home) and exits 75. The contact's card is not edited: it is signed by its owner.

            Example:
              EDITOR=nano meishi contacts edit ken
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("Contact id, DID or unique DID prefix, or unique name match.", valueName: "ref"),
              completion: .custom(ContactCompletion.refs))
    var ref: String

    func run(_ ctx: Context) throws {
        let session = try global.session(ctx)
        let (contact, notes) = try session.contacts.privateNotes(ref)
        let title = "\(CardRendering.name(contact.name)) (#\(contact.id ?? 0))"
        try EditLoop.edit(ctx, home: session.home, file: "contact-notes-edit",
                          text: PrivateNotesText.text(of: notes, title: title), wording: .privateNotes) { text in
            do throws(PrivateNotesText.LineError) {
                return .success(try PrivateNotesText.notes(from: text))
            } catch {
                return .failure(EditLoop.Problem(line: error.line, message: error.reason))
            }
        } save: { edited, path in
            guard edited != notes else { return ctx.out.note("no changes") }
            // The edit applies to the note and tags it started from: a `contacts note` or `tag`
            // run meanwhile is not undone; the edited text stays for the next try.
            let saved: PrivateNotes
            switch try session.contacts.setPrivateNotes(edited, of: contact, ifStill: notes) {
            case .stored(let stored): saved = stored
            case .changed(let current):
                throw EditLoop.KeepFile(failure: MeishiFailure.ownNotesChangedWhileEditing(
                    note: current.note != notes.note, tags: current.tags != notes.tags, kept: path))
            }
            ctx.out.line("saved your note and tags on \(title): " + (saved.tags.isEmpty ? "no tags" : "tags " + saved.tags.map(Console.safe).joined(separator: ", "))
                         + (saved.note == nil ? ", no note" : ", a note of \(saved.note!.count) characters"))
        }
    }
}

extension EditLoop.Wording {
    /// `contacts edit`'s words: "your note and tags are unchanged".
    static let privateNotes = EditLoop.Wording(
        cancelled: MeishiFailure.ownNotesEditCancelled, notSaved: MeishiFailure.ownNotesNotSaved,
        interrupted: { MeishiFailure("the editor \($0) was interrupted; \(MeishiFailure.ownNotesUnchanged)", status: .failure) },
        failed: { MeishiFailure("the editor \($0) failed (exit \($1)); \(MeishiFailure.ownNotesUnchanged)", status: .failure) })
}
