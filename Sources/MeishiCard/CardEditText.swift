import Foundation

/// The text form of the user's card that `meishi card edit` opens in an editor: one value per
/// line, `FIELD [LEVEL]: VALUE`, comments starting with `#`.
public enum CardEditText {
    /// A line that could not be read, counting from 1.
    public struct LineError: Error, Equatable, Sendable {
        public let line: Int
        public let reason: Reason

        public enum Reason: Equatable, Sendable {
            /// Not `FIELD [LEVEL]: VALUE`.
            case malformed
            /// A level other than public, professional, personal.
            case unknownLevel(String)
            /// The value or field was refused by the card rules.
            case refused(CardError)
        }
    }

    static let header = """
        # Your meishi card. One value per line:  FIELD [LEVEL]: VALUE
        # Fields: name, title, org, email, phone, url, address, note, x-<word>; email, phone and url
        # may appear on several lines. Levels: public, professional, personal (without one, the
        # field's default). An address or note goes on over lines that start with a space. Lines
        # starting with # are ignored. Save an empty file to cancel.

        """

    /// The card as text, fields in display order.
    public static func text(of card: Card) -> String {
        var out = header
        for f in card.fieldNames {
            for v in card.fields[f]! {
                // Later lines of a value of several lines are indented: continuation lines.
                out += "\(f.rawValue) [\(v.level.rawValue)]: \(v.value.replacingOccurrences(of: "\n", with: "\n    "))\n"
            }
        }
        return out
    }

    /// Whether `text` holds nothing but comments and blank lines.
    public static func isEmpty(_ text: String) -> Bool {
        text.split(whereSeparator: \.isNewline).allSatisfy {
            let t = $0.trimmingCharacters(in: .whitespaces)
            return t.isEmpty || t.hasPrefix("#")
        }
    }

    /// The card `text` describes, checked by the same rules as `card set` and `card add`.
    public static func card(from text: String) throws(LineError) -> Card {
        var card = Card()
        // Join continuation lines (indented, after a value line) to the value they continue.
        var entries: [(line: Int, text: String)] = []
        var n = 0
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            n += 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") { continue }
            if line.isEmpty { entries.append((n, "")); continue }
            if raw.first == " " || raw.first == "\t", let last = entries.last, !last.text.isEmpty {
                entries[entries.count - 1].text += "\n" + line
                continue
            }
            entries.append((n, line))
        }
        for (n, text) in entries {
            let line = text
            if line.isEmpty { continue }
            guard let colon = line.firstIndex(of: ":") else { throw LineError(line: n, reason: .malformed) }
            var head = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            var level: DisclosureLevel?
            if head.hasSuffix("]"), let open = head.lastIndex(of: "[") {
                let word = head[head.index(after: open)..<head.index(before: head.endIndex)].trimmingCharacters(in: .whitespaces)
                guard let l = DisclosureLevel(rawValue: word.lowercased()) else { throw LineError(line: n, reason: .unknownLevel(word)) }
                level = l
                head = head[..<open].trimmingCharacters(in: .whitespaces)
            }
            guard !head.isEmpty, !head.contains(" ") else { throw LineError(line: n, reason: .malformed) }
            do throws(CardError) {
                let field = try FieldName(head.lowercased())
                if field.isMultiValued {
                    try card.add(field, value, level: level)
                } else {
                    guard card.fields[field] == nil else { throw CardError.notMultiValued(field) }
                    try card.set(field, value, level: level)
                }
            } catch {
                throw LineError(line: n, reason: .refused(error))
            }
        }
        return card
    }
}
