import Foundation
import GRDB
import MeishiCard

/// How much a stored contact is to be believed.
public enum Trust: String, CaseIterable, Codable, Comparable, Sendable, DatabaseValueConvertible {
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

/// A stored contact: the latest card received from one DID.
public struct Contact: Codable, Equatable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "contact"

    public var id: Int64?
    public var did: String
    public var name: String?
    public var org: String?
    /// The card's fields as received: a JSON object of field name -> array of strings.
    public var fields: [String: [String]]
    public var level: DisclosureLevel
    public var trust: Trust
    /// Where the card came from: `file`, `stdin`, `exchange`, `qr`, `vcard`.
    public var source: String
    /// When this DID was first and last stored (Unix seconds).
    public var firstSeen: Int64
    public var lastSeen: Int64
    /// The signed timestamp of the stored card.
    public var cardTimestamp: Int64
    public var signPubKey: Data?
    public var pubKey: Data?
    /// The signed payload exactly as received, kept for re-verification.
    public var payload: Data?
    /// Set when another DID already uses this name or email: the ids of those contacts.
    public var conflictsWith: String?
    /// Values an unsigned vCard added to a verified contact: shown apart, never vouched for.
    public var unsignedFields: [String: [String]]?
    /// What an imported vCard held beyond the fields (`VCardExtras` JSON), for export.
    public var vcard: String?

    public init(id: Int64? = nil, did: String, fields: [String: [String]], level: DisclosureLevel, trust: Trust,
                source: String, seen: Int64, cardTimestamp: Int64, signPubKey: Data? = nil, pubKey: Data? = nil,
                payload: Data? = nil) {
        self.id = id
        self.did = did
        self.name = fields["name"]?.first
        self.org = fields["org"]?.first
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

    /// A contact for a verified payload.
    public init(payload p: ProximityPayload, trust: Trust, source: String, seen: Int64, rawPayload: [UInt8]) {
        self.init(did: p.senderDID, fields: p.cardFields.mapValues(\.values), level: p.level, trust: trust,
                  source: source, seen: seen, cardTimestamp: p.timestamp, signPubKey: Data(p.signPubKey),
                  pubKey: Data(p.pubKey), payload: Data(rawPayload))
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Decodes a row by hand: the `fields` JSON goes through the card model's parser, several
    /// times faster than a JSONDecoder per row (it shows in `contacts list`).
    public init(row: Row) throws {
        id = row["id"]
        did = row["did"]
        name = row["name"]
        org = row["org"]
        let json: String = row["fields"]
        var decoded: [String: [String]] = [:]
        if case .object(let members)? = try? StrictJSONParser.parse(Array(json.utf8)) {
            for m in members {
                guard case .array(let items) = m.value else { continue }
                decoded[m.key] = items.compactMap { if case .string(let v) = $0 { v } else { nil } }
            }
        }
        fields = decoded
        level = DisclosureLevel(rawValue: row["level"]) ?? .public
        trust = Trust(rawValue: row["trust"]) ?? .unsigned
        source = row["source"]
        firstSeen = row["firstSeen"]
        lastSeen = row["lastSeen"]
        cardTimestamp = row["cardTimestamp"]
        signPubKey = row["signPubKey"]
        pubKey = row["pubKey"]
        payload = row["payload"]
        conflictsWith = row["conflictsWith"]
        unsignedFields = Self.fieldMap(row["unsignedFields"])
        vcard = row["vcard"]
    }

    /// Ids of the contacts this one may impersonate.
    public var conflictIDs: [Int64] {
        (conflictsWith ?? "").split(separator: ",").compactMap { Int64($0) }
    }

    /// Values worth matching on: emails (lowercased) and phones (E.164 where known).
    var matchValues: [(field: String, value: String, normalized: String)] {
        var out: [(String, String, String)] = []
        for e in fields["email"] ?? [] { out.append(("email", e, CardText.normalizedEmail(e))) }
        for p in fields["phone"] ?? [] { out.append(("phone", p, CardText.e164(p) ?? p)) }
        return out
    }
}

extension DisclosureLevel: DatabaseValueConvertible {}

/// One email or phone of a contact, normalised, for search and matching.
struct ContactValue: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "contact_value"
    var contactId: Int64
    var field: String
    var value: String
    var normalized: String
}
