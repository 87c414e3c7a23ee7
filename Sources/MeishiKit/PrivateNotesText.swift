import Foundation
import MeishiStore

/// The text form of my note and tags on a contact that `meishi contacts edit` opens in an
/// editor: a `tags:` line (comma-separated), then a `note:` line and the note on the lines after
/// it. Above `note:`, lines starting with `#` and blank lines are ignored.
public enum PrivateNotesText {
    /// A line that could not be read, counting from 1, and why.
    public struct LineError: Error, Equatable, Sendable {
        public let line: Int
        public let reason: String
    }

    /// The text for `notes`; `title` names the contact in the header ("Mei Tanaka (#1)").
    public static func text(of notes: PrivateNotes, title: String) -> String {
        """
        # Your own note and tags for \(title): kept on this machine, never shared.
        # tags: comma-separated. The note is every line after 'note:'.
        # Above 'note:', lines starting with # are ignored. Save an empty file to cancel.

        tags: \(notes.tags.joined(separator: ", "))
        note:
        \(notes.note ?? "")

        """
    }

    /// The note and tags `text` holds, checked as `contacts note` and `contacts tag` check them.
    public static func notes(from text: String) throws(LineError) -> PrivateNotes {
        var tags: [String] = []
        var noteLines: [String]?
        var noteLine = 0
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (index, raw) in lines.enumerated() {
            if noteLines != nil {
                noteLines!.append(String(raw))
                continue
            }
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.lowercased().hasPrefix("tags:") {
                for item in line.dropFirst(5).split(separator: ",") {
                    let tag = item.trimmingCharacters(in: .whitespaces)
                    if tag.isEmpty { continue }
                    if let problem = PrivateNotes.problem(tag: tag) { throw LineError(line: index + 1, reason: problem) }
                    tags.append(tag)
                }
                if tags.count > PrivateNotes.maximumTags {
                    throw LineError(line: index + 1, reason: "at most \(PrivateNotes.maximumTags) tags")
                }
            } else if line.lowercased().hasPrefix("note:") {
                let rest = line.dropFirst(5).trimmingCharacters(in: .whitespaces)
                noteLines = rest.isEmpty ? [] : [rest]
                noteLine = index + 1
            } else {
                throw LineError(line: index + 1, reason: "expected 'tags: A, B' or 'note:' (the note goes on the lines after it)")
            }
        }
        let note = (noteLines ?? []).joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
        if let problem = PrivateNotes.problem(note: note) { throw LineError(line: noteLine, reason: problem) }
        return PrivateNotes(note: note.isEmpty ? nil : note, tags: tags)
    }
}
