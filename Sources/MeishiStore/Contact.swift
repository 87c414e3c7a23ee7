import Foundation
import GRDB
import MeishiCard
import MeishiCrypto
import MeishiText

/// How much a stored contact is to be believed.
public enum Trust: String, CaseIterable, Comparable, Sendable, DatabaseValueConvertible {
    /// Imported without a signature (a vCard).
    case unsigned
    /// A valid signature, not met in person.
    case signed
    /// Exchanged in person with a code both people confirmed.
    case met

    private var rank: Int {
        switch self {
        case .unsigned: 0
        case .signed: 1
        case .met: 2
        }
    }

    public static func < (lhs: Trust, rhs: Trust) -> Bool { lhs.rank < rhs.rank }
}

/// Where a stored card came from. The raw values are the text the store has always kept.
public enum ContactSource: String, CaseIterable, Sendable, DatabaseValueConvertible {
    /// `contacts add FILE`.
    case file
    /// `contacts add -` or `contacts import -`.
    case stdin
    /// `contacts import FILE…` (vCards).
    case vcard
    case exchange
    /// A signed meishi card read from a QR code.
    case qr
    /// An unsigned contact read from a QR code, by its format.
    case qrVCard = "qr-vcard"
    case qrMECARD = "qr-mecard"
    case qrSolidarity = "qr-solidarity"
    case qrAirmeishi = "qr-airmeishi"
    /// A signed Solidarity card (`scan` of its QR code).
    case solidarity
    /// A newer card the contact pushed to `listen` (`card push`).
    case push

    /// The source of an unsigned contact read from a QR code in `format`.
    public static func qr(_ format: ImportFormat) -> ContactSource {
        switch format {
        case .vcard: .qrVCard
        case .mecard: .qrMECARD
        case .solidarityEnvelope, .solidarityLink: .qrSolidarity
        case .airmeishiLink: .qrAirmeishi
        }
    }
}

/// A stored contact: the latest card received from one DID.
public struct Contact: Equatable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "contact"

    public var id: Int64?
    public var did: String
    public var name: String?
    public var org: String?
    /// The card's fields as received.
    public var fields: [FieldName: [String]]
    public var level: DisclosureLevel
    public var trust: Trust
    /// Where the card came from: `exchange`; `file` or `stdin` (`contacts add`); `vcard` or `stdin`
    /// (`contacts import`); `qr`, `qr-vcard`, `qr-mecard` or `qr-solidarity` (`scan`); `solidarity`
    /// (a verified Solidarity card).
    public var source: ContactSource
    /// When this DID was first and last stored (Unix seconds).
    public var firstSeen: Int64
    public var lastSeen: Int64
    /// The signed timestamp of the stored card.
    public var cardTimestamp: Int64
    public var signPubKey: Ed25519.PublicKey?
    public var pubKey: X25519.PublicKey?
    /// The card exactly as it arrived (the JSON payload, the QR text, or the vCard), kept for
    /// re-verification and for passing a signed card on.
    public var payload: Data?
    /// Set when another DID already uses this name or email: the ids of those contacts.
    public var conflictsWith: String?
    /// Values an unsigned vCard added to a verified contact: shown apart, never vouched for.
    public var unsignedFields: [FieldName: [String]]?
    /// What an imported vCard held beyond the fields (`VCardExtras` JSON), for export.
    public var vcard: String?
    /// What the contact's earlier signed cards said that its current card does not (see
    /// `ContactStore.earlierValues`), newest first: shown and exported after the current fields.
    public var earlierFields: [FieldName: [String]]?
    /// The vCard `UID` an unsigned contact is exported under and that finds it again on import:
    /// its first card's, or the `urn:uuid:` its exports carry (`exportUID`). Nil on signed
    /// contacts, whose DID is their UID.
    public var uid: String?
    /// Only on the contact of an `updated` store outcome (never stored): the fields and level of
    /// the card the new one replaced, so the caller can say what changed.
    public var replaced: ReplacedCard?

    public init(id: Int64? = nil, did: String, fields: [FieldName: [String]], level: DisclosureLevel, trust: Trust,
                source: ContactSource, seen: Int64, cardTimestamp: Int64, signPubKey: Ed25519.PublicKey? = nil,
                pubKey: X25519.PublicKey? = nil, payload: Data? = nil) {
        self.id = id
        self.did = did
        self.name = fields[.name]?.first
        self.org = fields[.org]?.first
        self.fields = fields
        self.level = level
        self.trust = trust
        self.source = source
        self.firstSeen = seen
        self.lastSeen = seen
        self.cardTimestamp = cardTimestamp
        self.signPubKey = signPubKey
        self.pubKey = pubKey
        self.payload = payload
    }

    /// A contact for a verified card; `payload` keeps the bytes that arrived.
    public init(card: VerifiedCard, trust: Trust, source: ContactSource, seen: Int64) {
        let p = card.payload
        self.init(did: p.senderDID, fields: p.cardFields.mapValues(\.values), level: p.level, trust: trust,
                  source: source, seen: seen, cardTimestamp: p.timestamp, signPubKey: p.signPubKey,
                  pubKey: p.pubKey, payload: Data(card.bytes))
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    public func encode(to container: inout PersistenceContainer) throws {
        container["id"] = id
        container["did"] = did
        container["name"] = name
        container["org"] = org
        CardColumns(fields: fields, level: level, trust: trust).encode(to: &container)
        container["source"] = source
        container["firstSeen"] = firstSeen
        container["lastSeen"] = lastSeen
        container["cardTimestamp"] = cardTimestamp
        container["signPubKey"] = signPubKey.map { Data($0.rawRepresentation) }
        container["pubKey"] = pubKey.map { Data($0.rawRepresentation) }
        container["payload"] = payload
        container["conflictsWith"] = conflictsWith
        container["nameSkeleton"] = nameSkeleton
        container["nameSkeletonAsTyped"] = nameSkeletonAsTyped
        container["unsignedFields"] = unsignedFields.map(FieldsColumn.encode)
        container["vcard"] = vcard
        container["earlierFields"] = earlierFields.map(FieldsColumn.encode)
        container["uid"] = uid
    }

    /// The keys the impersonation check compares names by (`NameSkeleton`), nil without a name.
    public var nameSkeleton: String? { name.map(NameSkeleton.folded) }
    public var nameSkeletonAsTyped: String? { name.map(NameSkeleton.asTyped) }

    /// The first field holding a NUL character, if any: such a contact is never stored.
    var fieldWithNUL: FieldName? {
        fields.keys.sorted().first { f in fields[f]!.contains(where: TerminalText.containsNUL) }
    }

    /// Decodes a row by hand (several times faster than a JSONDecoder per row, which shows in
    /// `contacts list`). A damaged row throws `StoreError.damaged`; it never reads as empty.
    public init(row: Row) throws {
        id = row["id"]
        did = row["did"]
        name = row["name"]
        org = row["org"]
        let rowID: Int64 = row["id"] ?? 0
        func damaged(_ why: String) -> StoreError { .damaged("contact #\(rowID): \(why)") }
        let card = try CardColumns(row: row, damaged: damaged)
        (fields, level, trust) = (card.fields, card.level, card.trust)
        guard let s = (row["source"] as String?).flatMap(ContactSource.init(rawValue:)) else { throw damaged("unknown source") }
        source = s
        firstSeen = row["firstSeen"]
        lastSeen = row["lastSeen"]
        cardTimestamp = row["cardTimestamp"]
        if let k: Data = row["signPubKey"] {
            guard let key = try? Ed25519.PublicKey(rawRepresentation: k) else { throw damaged("bad signing key") }
            signPubKey = key
        }
        if let k: Data = row["pubKey"] {
            guard let key = try? X25519.PublicKey(rawRepresentation: k) else { throw damaged("bad box key") }
            pubKey = key
        }
        payload = row["payload"]
        conflictsWith = row["conflictsWith"]
        if let json: String = row["unsignedFields"] {
            guard let decoded = FieldsColumn.decode(json) else { throw damaged("the unsignedFields column is not valid") }
            unsignedFields = decoded
        }
        vcard = row["vcard"]
        if let json: String = row["earlierFields"] {
            guard let decoded = FieldsColumn.decode(json) else { throw damaged("the earlierFields column is not valid") }
            earlierFields = decoded
        }
        uid = row["uid"]
    }

    /// The changes from the card this one replaced to this one; empty unless `replaced` is set.
    public var changes: [FieldChange] {
        guard let r = replaced else { return [] }
        return FieldChange.between(r.fields, r.level, and: fields, level)
    }

    /// The `UID` the contact's vCard carries: its DID when signed, else `uid`, else a stable
    /// `urn:uuid:` derived from its key.
    public var exportUID: String {
        if trust > .unsigned, DIDKey.ed25519PublicKey(from: did) != nil { return did }
        return uid ?? Self.uuidURN(did)
    }

    /// A stable `urn:uuid:` (version 4 layout) derived from a contact's key.
    public static func uuidURN(_ key: String) -> String {
        var b = Array(SHA256.hash(Array(key.utf8)).prefix(16))
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let h = Array(Hex.encode(b))
        return "urn:uuid:" + [h[0..<8], h[8..<12], h[12..<16], h[16..<20], h[20..<32]].map { String($0) }.joined(separator: "-")
    }

    /// Ids of the contacts sharing this one's name or email (stored before or after it).
    public var conflictIDs: [Int64] {
        (conflictsWith ?? "").split(separator: ",").compactMap { Int64($0) }
    }

    /// Look-alikes stored before it: this one is the newcomer, marked `!`.
    public var earlierLookAlikes: [Int64] { conflictIDs.filter { $0 < (id ?? 0) } }
    /// Look-alikes stored after it, which may impersonate it.
    public var laterLookAlikes: [Int64] { conflictIDs.filter { $0 > (id ?? 0) } }

    /// Values worth matching on: emails (lowercased) and phones (E.164 where known).
    var matchValues: [(field: FieldName, value: String, normalized: String)] {
        [FieldName.email, .phone].flatMap { f in (fields[f] ?? []).map { (f, $0, Self.normalized(f, $0)) } }
    }

    /// The form two values of `field` are compared in: emails lowercased, phones in E.164 where
    /// known; other fields as they are.
    static func normalized(_ field: FieldName, _ value: String) -> String {
        switch field {
        case .email: CardText.normalizedEmail(value)
        case .phone: CardText.e164(value) ?? value
        default: value
        }
    }
}

/// The card a newer one replaced (see `Contact.replaced`).
public struct ReplacedCard: Equatable, Sendable {
    public var fields: [FieldName: [String]]
    public var level: DisclosureLevel
}

/// The one codec of the `fields` column: a JCS JSON object of field name -> array of strings.
public enum FieldsColumn {
    /// The column text for `fields`.
    public static func encode(_ fields: [FieldName: [String]]) -> String {
        let object = Dictionary(uniqueKeysWithValues: fields.map { ($0.key.rawValue, JSONValue.array($0.value.map(JSONValue.string))) })
        return String(decoding: JCS.canonicalize(.object(object)), as: UTF8.self)
    }

    /// The fields a column text holds, or nil when it is damaged (not JSON, an unknown field
    /// name, a value that is not a string or that holds a NUL).
    public static func decode(_ text: String) -> [FieldName: [String]]? {
        guard case .object(let members)? = try? StrictJSONParser.parse(Array(text.utf8)) else { return nil }
        var out: [FieldName: [String]] = [:]
        for m in members {
            guard let name = try? FieldName(m.key), case .array(let items) = m.value else { return nil }
            var values: [String] = []
            for item in items {
                guard case .string(let v) = item, !TerminalText.containsNUL(v) else { return nil }
                values.append(v)
            }
            out[name] = values
        }
        return out
    }
}

/// What a card said and how far it is believed: the columns a contact row and each row of its
/// card history (`ReceivedCard`) share, read (every value checked) and written here only.
struct CardColumns {
    var fields: [FieldName: [String]]
    var level: DisclosureLevel
    var trust: Trust

    func encode(to container: inout PersistenceContainer) {
        container["fields"] = FieldsColumn.encode(fields)
        container["level"] = level
        container["trust"] = trust
    }
}

extension CardColumns {
    /// The columns of `row`; a missing or damaged one throws `damaged(why)`, never reads as empty.
    init(row: Row, damaged: (String) -> StoreError) throws {
        guard let json: String = row["fields"] else { throw damaged("no fields") }
        guard let f = FieldsColumn.decode(json) else { throw damaged("the fields column is not valid") }
        guard let l = (row["level"] as String?).flatMap(DisclosureLevel.init(rawValue:)) else { throw damaged("unknown level") }
        guard let t = (row["trust"] as String?).flatMap(Trust.init(rawValue:)) else { throw damaged("unknown trust") }
        self.init(fields: f, level: l, trust: t)
    }
}

extension DisclosureLevel: DatabaseValueConvertible {}

/// One email or phone of a contact, normalised, for search and matching.
struct ContactValue: PersistableRecord {
    static let databaseTableName = "contact_value"
    var contactId: Int64
    var field: FieldName
    var value: String
    var normalized: String

    func encode(to container: inout PersistenceContainer) {
        container["contactId"] = contactId
        container["field"] = field.rawValue
        container["value"] = value
        container["normalized"] = normalized
    }
}
