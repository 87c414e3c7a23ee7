import Foundation

/// Writing and reading vCards (RFC 6350, RFC 2426, vCard 2.1) and MECARDs. The writer, the
/// parser, the reader and the MECARD reader live in their own files.
public enum VCard {}

/// Contact data read from a vCard (2.1, 3.0, 4.0) or a MECARD, mapped to meishi field names.
public struct ImportedContact: Equatable, Sendable {
    /// Most values one multi-valued field takes from a card; more are kept as extras.
    public static let maximumValuesPerField = Card.maximumValueCount

    public var fields: [FieldName: [String]]
    /// The `X-MEISHI-DID` property, when it holds an Ed25519 did:key.
    public var did: String?
    /// `REV` as Unix seconds, when present and parseable.
    public var revision: Int64?
    /// The card's `UID`: kept, exported again, and how a later import of the card finds it.
    public var uid: String?
    /// What the contact was read from.
    public var format: ImportFormat
    /// What meishi has no field for, kept to be written back on export.
    public var extras = VCardExtras()
    /// My own note and tags on the contact, from meishi's own `contacts export --with-notes`
    /// (`NOTE` and `CATEGORIES` marked `X-MEISHI-OWN=true`): never a card value or a kept property.
    public var ownNote: String?
    public var ownTags: [String] = []

    public init(fields: [FieldName: [String]] = [:], format: ImportFormat) {
        self.fields = fields
        self.format = format
    }

    public var name: String? { fields[.name]?.first }

    /// Adds `value` to `field`; false when it cannot be held (too long, a second name, too many
    /// values) and should be kept some other way.
    @discardableResult
    mutating func add(_ field: FieldName, _ value: String, decoration: VCardExtras.Decoration? = nil) -> Bool {
        var v = value.trimmingCharacters(in: .whitespacesAndNewlines)
        if v.unicodeScalars.contains("\r") { v = v.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n") }
        guard !v.isEmpty else { return true }
        guard v.utf8.count <= Card.maximumValueBytes, !v.unicodeScalars.contains("\u{0}") else { return false }
        // A second title, note, organisation or address is a value too (vCard allows several);
        // a second name is not (it is kept as written).
        if field.isMultiValued || (field != .name && fields[field] != nil) {
            if (fields[field] ?? []).contains(v) { return true }
            guard (fields[field]?.count ?? 0) < Self.maximumValuesPerField else { return false }
            fields[field, default: []].append(v)
            if let decoration { extras.decorations[VCardExtras.key(field, v)] = decoration }
            return true
        }
        if let old = fields[field] { return old == [v] }
        fields[field] = [v]
        return true
    }
}

/// The kinds of unsigned contact meishi reads: typed where they are read, so nothing parses a
/// display string back to learn the kind.
public enum ImportFormat: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// A vCard, with its `VERSION` as written ("2.1", "3.0", "4.0"; "3.0" when missing).
    case vcard(version: String)
    case mecard
    /// A Solidarity plaintext envelope (a JSON snapshot of a card, not signed).
    case solidarityEnvelope
    /// A `solidarity://contact?…` link.
    case solidarityLink
    /// An `airmeishi://…` link.
    case airmeishiLink

    /// As shown to the person: "vCard 4.0", "MECARD", "Solidarity link".
    public var description: String {
        switch self {
        case .vcard(let version): "vCard " + version
        case .mecard: "MECARD"
        case .solidarityEnvelope: "Solidarity plaintext envelope"
        case .solidarityLink: "Solidarity link"
        case .airmeishiLink: "airmeishi link"
        }
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { i >= 0 && i < count ? self[i] : nil }
}
