import Foundation
import GRDB
import MeishiCard

/// My own words about a contact: a note and tags, kept in the store only (migration
/// `v7-notes-and-tags`). Never part of a card: shares, QR codes and pushes are made from cards,
/// and exports carry them only when asked (`contacts export --with-notes`).
public struct PrivateNotes: Equatable, Sendable {
    /// Longest note, in UTF-8 bytes.
    public static let maximumNoteBytes = 8192
    /// Longest tag, in UTF-8 bytes, and most tags on one contact.
    public static let maximumTagBytes = 64
    public static let maximumTags = 64

    public var note: String?
    /// In the order they were added; compared ignoring ASCII case.
    public var tags: [String]

    public init(note: String? = nil, tags: [String] = []) {
        self.note = note
        self.tags = tags
    }

    public var isEmpty: Bool { note == nil && tags.isEmpty }

    /// Why `text` cannot be a note, or nil: at most `maximumNoteBytes`, lines and tabs but no
    /// other control character.
    public static func problem(note text: String) -> String? {
        if text.utf8.count > maximumNoteBytes { return "the note is longer than \(maximumNoteBytes) bytes" }
        if text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" }) {
            return "the note holds a control character (line breaks and tabs are fine)"
        }
        return nil
    }

    /// Why `tag` cannot be a tag, or nil: 1 to `maximumTagBytes` bytes, no comma (vCard's
    /// CATEGORIES separates tags by commas), no control character, not only blanks.
    public static func problem(tag: String) -> String? {
        if tag.trimmingCharacters(in: .whitespaces).isEmpty { return "a tag cannot be empty" }
        if tag.utf8.count > maximumTagBytes { return "a tag is at most \(maximumTagBytes) bytes" }
        if tag.contains(",") { return "a tag cannot hold a comma" }
        if tag.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return "a tag cannot hold a control character" }
        return nil
    }

    /// `tags` with duplicates (ignoring ASCII case) left out, the first spelling kept.
    static func distinct(_ tags: [String]) -> [String] {
        var seen = Set<String>()
        return tags.filter { seen.insert($0.lowercased()).inserted }
    }
}

/// What `setPrivateNotes(_:of:ifStill:)` did.
public enum PrivateNotesUpdate: Equatable, Sendable {
    /// Written: what is stored now.
    case stored(PrivateNotes)
    /// Not written: the note or tags changed since; what they are now.
    case changed(PrivateNotes)
}

extension ContactStore {
    /// The contact's note and tags.
    public func privateNotes(of contactID: Int64) throws(StoreError) -> PrivateNotes {
        try read { db in try Self.privateNotes(of: contactID, in: db) }
    }

    static func privateNotes(of contactID: Int64, in db: Database) throws -> PrivateNotes {
        let note = try String.fetchOne(db, sql: "SELECT note FROM contact_note WHERE contactId = ?", arguments: [contactID])
        let tags = try String.fetchAll(db, sql: "SELECT tag FROM contact_tag WHERE contactId = ? ORDER BY rowid", arguments: [contactID])
        return PrivateNotes(note: note, tags: tags)
    }

    /// Every contact's note and tags, by contact id (contacts without either left out).
    public func allPrivateNotes() throws(StoreError) -> [Int64: PrivateNotes] {
        try read { db in
            var out: [Int64: PrivateNotes] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT contactId, note FROM contact_note") {
                out[row["contactId"], default: PrivateNotes()].note = row["note"]
            }
            for row in try Row.fetchAll(db, sql: "SELECT contactId, tag FROM contact_tag ORDER BY rowid") {
                out[row["contactId"], default: PrivateNotes()].tags.append(row["tag"])
            }
            return out
        }
    }

    /// Replaces the contact's note and tags (nil or empty removes them); returns what is stored.
    @discardableResult
    public func setPrivateNotes(_ notes: PrivateNotes, of contactID: Int64) throws(StoreError) -> PrivateNotes {
        try write { db in try Self.replacePrivateNotes(notes, of: contactID, in: db) }
    }

    /// Replaces the contact's note and tags only if they are still `expected` (what an editor
    /// started from), in one transaction: `.stored` with what is stored, or `.changed` with what
    /// another command wrote meanwhile (nothing is written then).
    public func setPrivateNotes(_ notes: PrivateNotes, of contactID: Int64,
                                ifStill expected: PrivateNotes) throws(StoreError) -> PrivateNotesUpdate {
        try write { db in
            let current = try Self.privateNotes(of: contactID, in: db)
            guard current == expected else { return .changed(current) }
            return .stored(try Self.replacePrivateNotes(notes, of: contactID, in: db))
        }
    }

    private static func replacePrivateNotes(_ notes: PrivateNotes, of contactID: Int64, in db: Database) throws -> PrivateNotes {
        try db.execute(sql: "DELETE FROM contact_note WHERE contactId = ?", arguments: [contactID])
        if let note = notes.note, !note.isEmpty {
            try db.execute(sql: "INSERT INTO contact_note (contactId, note) VALUES (?, ?)", arguments: [contactID, note])
        }
        try db.execute(sql: "DELETE FROM contact_tag WHERE contactId = ?", arguments: [contactID])
        for tag in PrivateNotes.distinct(notes.tags) {
            try db.execute(sql: "INSERT INTO contact_tag (contactId, tag) VALUES (?, ?)", arguments: [contactID, tag])
        }
        return try Self.privateNotes(of: contactID, in: db)
    }

    /// My note and tags read back from my own `contacts export --with-notes` (see
    /// `ImportedContact.ownNote`): the note when the contact has none yet (mine stays as it is),
    /// the tags it lacks (within the limits); a note or tag that could not be typed is left out.
    static func restoreOwnNotes(note: String?, tags: [String], on contactID: Int64, in db: Database) throws {
        guard note != nil || !tags.isEmpty else { return }
        var notes = try privateNotes(of: contactID, in: db)
        let before = notes
        if notes.note == nil, let note, PrivateNotes.problem(note: note) == nil { notes.note = note }
        for tag in tags where PrivateNotes.problem(tag: tag) == nil && notes.tags.count < PrivateNotes.maximumTags {
            notes.tags = PrivateNotes.distinct(notes.tags + [tag])
        }
        guard notes != before else { return }
        if notes.note != before.note, let note = notes.note {
            try db.execute(sql: "INSERT INTO contact_note (contactId, note) VALUES (?, ?)", arguments: [contactID, note])
        }
        for tag in notes.tags.dropFirst(before.tags.count) {
            try db.execute(sql: "INSERT INTO contact_tag (contactId, tag) VALUES (?, ?)", arguments: [contactID, tag])
        }
    }

    /// Adds `tags` (or removes them, `removing`) on the contact; returns its tags after.
    public func tag(_ contactID: Int64, _ tags: [String], removing: Bool = false) throws(StoreError) -> [String] {
        try write { db in
            var notes = try Self.privateNotes(of: contactID, in: db)
            if removing {
                let gone = Set(tags.map { $0.lowercased() })
                notes.tags.removeAll { gone.contains($0.lowercased()) }
            } else {
                notes.tags = PrivateNotes.distinct(notes.tags + tags)
            }
            try db.execute(sql: "DELETE FROM contact_tag WHERE contactId = ?", arguments: [contactID])
            for tag in notes.tags {
                try db.execute(sql: "INSERT INTO contact_tag (contactId, tag) VALUES (?, ?)", arguments: [contactID, tag])
            }
            return notes.tags
        }
    }
}
