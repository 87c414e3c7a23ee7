import Foundation

/// Writing and reading vCards (RFC 6350, RFC 2426, vCard 2.1) and MECARDs. The writer, the
/// reader and the MECARD reader live in their own files.
public enum VCard {}

/// Contact data read from a vCard (2.1, 3.0, 4.0) or a MECARD, mapped to meishi field names.
public struct ImportedContact: Equatable, Sendable {
    public var fields: [String: [String]] = [:]
    /// The `X-MEISHI-DID` property, when it holds an Ed25519 did:key.
    public var did: String?
    /// `REV` as Unix seconds, when present and parseable.
    public var revision: Int64?
    /// "vCard 4.0", "vCard 2.1", "MECARD".
    public var format: String

    public var name: String? { fields["name"]?.first }

    mutating func add(_ field: String, _ value: String) {
        let v = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !v.isEmpty, v.utf8.count <= Card.maximumValueBytes else { return }
        if FieldName.multiValued.contains(field) {
            if !(fields[field] ?? []).contains(v) { fields[field, default: []].append(v) }
        } else if fields[field] == nil {
            fields[field] = [v]
        }
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { i >= 0 && i < count ? self[i] : nil }
}
