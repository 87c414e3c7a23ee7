import Foundation
import GRDB
import MeishiCard

/// How two people met, as a contact's meeting records it.
public enum MeetingKind: String, CaseIterable, Sendable, DatabaseValueConvertible {
    /// `exchange`, the person comparing the 6 digits (or `--yes`).
    case exchange
    /// `exchange --code`: both typed the same code.
    case code
    /// A table exchange (several people at once).
    case table
    /// Through a relay.
    case relay
    /// `scan`: a QR code, photographed or from a camera.
    case qr
    /// `contacts add FILE` (or standard input): a card someone sent.
    case file
    /// `contacts import`: a vCard.
    case `import`
}

/// One time a contact was met: when, how, and at which event when one was named (`--event`,
/// the `event` configuration key, `MEISHI_EVENT`). Migration `v6-meetings`.
public struct Meeting: Equatable, Sendable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "meeting"
    /// Longest event name, in UTF-8 bytes.
    public static let maximumEventBytes = 200

    public var id: Int64?
    public var contactID: Int64
    /// Unix seconds.
    public var at: Int64
    public var how: MeetingKind
    public var event: String?
    /// The level of my card the contact received at this meeting (an exchange); nil when it
    /// received none (a scan, a file, an import). `card push` sends at the level last given.
    public var gave: DisclosureLevel?

    public init(contactID: Int64 = 0, at: Int64, how: MeetingKind, event: String? = nil, gave: DisclosureLevel? = nil) {
        self.contactID = contactID
        self.at = at
        self.how = how
        self.event = event
        self.gave = gave
    }

    public init(row: Row) throws {
        id = row["id"]
        contactID = row["contactId"]
        at = row["at"]
        guard let h = (row["how"] as String?).flatMap(MeetingKind.init(rawValue:)) else {
            throw StoreError.damaged("meeting #\(id ?? 0) of contact #\(contactID): unknown kind")
        }
        how = h
        event = row["event"]
        if let g: String = row["gave"] {
            guard let level = DisclosureLevel(rawValue: g) else { throw StoreError.damaged("meeting #\(id ?? 0) of contact #\(contactID): unknown level") }
            gave = level
        }
    }

    public func encode(to container: inout PersistenceContainer) {
        container["id"] = id
        container["contactId"] = contactID
        container["at"] = at
        container["how"] = how
        container["event"] = event
        container["gave"] = gave
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) { id = inserted.rowID }

    /// Whether `text` can name an event: 1 to `maximumEventBytes` bytes, no control character
    /// (a newline, an escape) and not only blanks.
    public static func isValidEvent(_ text: String) -> Bool {
        !text.trimmingCharacters(in: .whitespaces).isEmpty && text.utf8.count <= maximumEventBytes
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}

extension ContactStore {
    /// The contact's meetings, oldest first.
    public func meetings(of contactID: Int64) throws(StoreError) -> [Meeting] {
        try read { db in try Meeting.filter(Column("contactId") == contactID).order(Column("at"), Column("id")).fetchAll(db) }
    }

    /// Records `meeting` on the contact `contactID` in the transaction of `db`.
    static func record(_ meeting: Meeting, on contactID: Int64, in db: Database) throws {
        var m = meeting
        m.id = nil
        m.contactID = contactID
        try m.insert(db)
    }
}
