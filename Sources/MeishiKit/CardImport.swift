import Foundation
import MeishiCard

/// Filling the user's own card from a vCard.
public enum CardImport {
    /// Largest vCard file read for one card.
    public static let maximumFileBytes = 1 << 20

    /// What applying a vCard did: the values set or added, and those the card rules refused.
    public struct Result: Sendable {
        public var applied: [(field: FieldName, value: String, level: DisclosureLevel)] = []
        public var refused: [(field: FieldName, value: String, error: CardError)] = []
    }

    /// The one card in `bytes` (read from `file`, limited to `maximumFileBytes`); a file with
    /// none or several is refused.
    public static func contact(in bytes: [UInt8], file: String) throws(MeishiError) -> (ImportedContact, [VCardProblem]) {
        guard bytes.count <= maximumFileBytes else { throw .fileTooLarge(path: file, limit: maximumFileBytes) }
        let (contacts, problems) = VCard.read(bytes)
        guard contacts.count == 1 else {
            if contacts.isEmpty, let p = problems.first { throw .vcard(path: file, p) }
            throw .notOneCard(path: file, count: contacts.count)
        }
        return (contacts[0].contact, problems)
    }

    /// Sets single-valued fields and adds missing values to email, phone and url, each at the
    /// level `level` gives. Values the card rules refuse are reported, not applied.
    public static func apply(_ contact: ImportedContact, to card: inout Card, level: (FieldName, String) -> DisclosureLevel) -> Result {
        var result = Result()
        for field in contact.fields.keys.sorted() {
            for value in contact.fields[field]! {
                if card.fields[field]?.contains(where: { $0.value == value.precomposedStringWithCanonicalMapping }) == true {
                    if field.isMultiValued { continue } else { break }
                }
                let l = level(field, value)
                do throws(CardError) {
                    if field.isMultiValued { try card.add(field, value, level: l) } else { try card.set(field, value, level: l) }
                    result.applied.append((field, value, l))
                } catch {
                    result.refused.append((field, value, error))
                }
                if !field.isMultiValued { break }
            }
        }
        return result
    }
}
