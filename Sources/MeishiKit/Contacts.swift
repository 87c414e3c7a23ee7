import Foundation
import Logging
import MeishiCard
import MeishiStore

/// Opening the store of a home and adding verified cards to it.
public struct ContactsService: Sendable {
    public let home: Home
    /// Unix seconds now: opening the store purges the messages expired by then.
    public let clock: @Sendable () -> Int64

    public init(home: Home, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }) {
        self.home = home
        self.clock = clock
    }

    /// Opens the store, creating the home and the database when missing, and deletes expired
    /// messages (a cheap read when none are due; a failed purge is logged, not fatal) unless
    /// `purging` is false (`inbox --purge`, which purges itself and counts).
    ///
    /// `readOnly` is for a command that only reads: an existing, up-to-date store with nothing to
    /// purge is then opened read-only (`ContactStore.readOnly`), which writes nothing; any other
    /// store is opened as for writing, so it is still created, migrated and purged.
    public func open(purging: Bool = true, readOnly: Bool = false) throws(MeishiError) -> ContactStore {
        let logger = Logger(label: "meishi.store")
        if readOnly, let store = try? ContactStore.readOnly(path: home.databasePath, logger: logger),
           !purging || (try? store.hasExpiredMessages(now: clock())) == false {
            return store
        }
        try home.ensureExists()
        let store: ContactStore
        do { store = try ContactStore(path: home.databasePath, logger: logger) } catch { throw .store(error) }
        guard purging else { return store }
        let now = clock()
        do {
            if try store.hasExpiredMessages(now: now) { try store.purgeExpiredMessages(now: now) }
        } catch {
            logger.warning("expired messages not purged yet: \(error)")
        }
        return store
    }

    /// The one contact `ref` names (see `ContactStore.resolve`).
    public func resolve(_ ref: String) throws(MeishiError) -> Contact {
        let store = try open(readOnly: true)
        do { return try store.resolve(ref) } catch { throw .store(error) }
    }

    /// The one contact `ref` names, with what its earlier signed cards said that its current
    /// card does not (newest card first), its meetings (oldest first), my note and tags, how it
    /// was first seen (`source` is the latest card's) and the key rotations it followed.
    public func show(_ ref: String) throws(MeishiError)
        -> (Contact, earlier: [EarlierValues], meetings: [Meeting], notes: PrivateNotes, firstSource: ContactSource, rotations: [KeyRotation]) {
        let store = try open(readOnly: true)
        do {
            let c = try store.resolve(ref)
            return (c, try store.earlierValues(of: c), try store.meetings(of: c.id!), try store.privateNotes(of: c.id!),
                    try store.firstSource(of: c), try store.rotations(of: c.id!))
        } catch { throw .store(error) }
    }

    /// The contact `ref` names and my note and tags on it.
    public func privateNotes(_ ref: String) throws(MeishiError) -> (Contact, PrivateNotes) {
        let store = try open(readOnly: true)
        do {
            let c = try store.resolve(ref)
            return (c, try store.privateNotes(of: c.id!))
        } catch { throw .store(error) }
    }

    /// Replaces my note and tags on `contact` (checked by the caller: `PrivateNotes.problem`).
    @discardableResult
    public func setPrivateNotes(_ notes: PrivateNotes, of contact: Contact) throws(MeishiError) -> PrivateNotes {
        let store = try open()
        do { return try store.setPrivateNotes(notes, of: contact.id!) } catch { throw .store(error) }
    }

    /// Replaces my note and tags on `contact` if they are still `expected` (what `contacts edit`
    /// started from); otherwise writes nothing and returns what they are now.
    public func setPrivateNotes(_ notes: PrivateNotes, of contact: Contact, ifStill expected: PrivateNotes) throws(MeishiError) -> PrivateNotesUpdate {
        let store = try open()
        do { return try store.setPrivateNotes(notes, of: contact.id!, ifStill: expected) } catch { throw .store(error) }
    }

    /// Adds (or with `removing`, removes) my tags on the contact `ref` names; the contact and its
    /// tags after.
    public func tag(_ ref: String, _ tags: [String], removing: Bool) throws(MeishiError) -> (Contact, [String]) {
        let store = try open()
        do {
            let c = try store.resolve(ref)
            return (c, try store.tag(c.id!, tags, removing: removing))
        } catch { throw .store(error) }
    }

    /// The contact's meetings, oldest first.
    public func meetings(of contact: Contact) throws(MeishiError) -> [Meeting] {
        guard let id = contact.id else { return [] }
        let store = try open(readOnly: true)
        do { return try store.meetings(of: id) } catch { throw .store(error) }
    }

    /// Deletes the contact `ref` names and returns it.
    public func delete(_ ref: String) throws(MeishiError) -> Contact {
        let store = try open()
        do { return try store.delete(ref) } catch { throw .store(error) }
    }

    /// Deletes every contact `refs` name, or none of them (`ContactStore.delete(_:)`).
    public func delete(_ refs: [String]) throws(MeishiError) -> [Contact] {
        let store = try open()
        do { return try store.delete(refs) } catch { throw .store(error) }
    }

    /// Undoes the latest recorded merge into the contact `ref` names (see `ContactStore.split`).
    public func split(_ ref: String, now: Int64) throws(MeishiError) -> SplitOutcome {
        let store = try open()
        do { return try store.split(ref, now: now) } catch { throw .store(error) }
    }

    /// Stores a verified card, in `store` when the caller already opened it, and records the
    /// `meeting` it came from (and the common-friends `comparison` that ran with it). Refuses the
    /// user's own card: `ownDID` when the caller holds the identity, else the one in the home.
    public func add(_ card: VerifiedCard, trust: Trust, source: ContactSource, now: Int64, meeting: Meeting? = nil,
                    comparison: FriendComparison? = nil, ownDID: String? = nil, in store: ContactStore? = nil) throws(MeishiError) -> StoreOutcome {
        let me = ownDID ?? (try? IdentityStore(home: home).loadPublic())?.did
        if me == card.payload.senderDID { throw .ownCard }
        let contact = Contact(card: card, trust: trust, source: source, seen: now)
        let target: ContactStore
        if let store { target = store } else { target = try open() }
        do { return try target.store(contact, meeting: meeting, comparison: comparison) } catch { throw .store(error) }
    }
}
