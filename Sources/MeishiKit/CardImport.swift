import Foundation
import MeishiCard

/// Filling the user's own card from a vCard.
public enum CardImport {
    /// Largest vCard file read for one card.
    public static let maximumFileBytes = 1 << 20

    /// What applying a vCard did: the values set or added, and those the card rules refused.
    public struct Result: Sendable {
        public var applied: [(field: FieldName, value: String, level: DisclosureLevel)] = []
        public var refused: [(field: String, value: String, failure: MeishiFailure)] = []
    }

    /// The one card in `bytes`; a file with none or several is refused.
    public static func contact(in bytes: [UInt8], file: String) throws(MeishiFailure) -> (ImportedContact, [VCardProblem]) {
        let (contacts, problems) = VCard.read(bytes)
        guard contacts.count == 1 else {
            if contacts.isEmpty, let p = problems.first {
                throw MeishiFailure("\(file):\(p.line): \(p.description)", status: .dataError)
            }
            throw MeishiFailure("\(file) holds \(contacts.count) cards; your card is filled from one",
                                hint: "export a single contact from your address book", status: .dataError)
        }
        return (contacts[0].contact, problems)
    }

    /// Sets single-valued fields and adds missing values to email, phone and url, each at the
    /// level `level` gives. Values the card rules refuse are reported, not applied.
    public static func apply(_ contact: ImportedContact, to card: inout Card, level: (FieldName, String) -> DisclosureLevel) -> Result {
        var result = Result()
        let names = contact.fields.keys.compactMap { try? FieldName($0) }.sorted()
        for field in names {
            for value in contact.fields[field.rawValue]! {
                if card.fields[field]?.contains(where: { $0.value == value.precomposedStringWithCanonicalMapping }) == true {
                    if field.isMultiValued { continue } else { break }
                }
                let l = level(field, value)
                do {
                    if field.isMultiValued { try card.add(field, value, level: l) } else { try card.set(field, value, level: l) }
                    result.applied.append((field, value, l))
                } catch {
                    result.refused.append((field.rawValue, value, MeishiFailure(error)))
                }
                if !field.isMultiValued { break }
            }
        }
        return result
    }
}
