import Foundation
import Logging
import MeishiCard
import MeishiStore

/// Opening the store of a home and adding verified cards to it.
public struct ContactsService: Sendable {
    public let home: Home

    public init(home: Home) { self.home = home }

    /// Opens the store, creating the home and the database when missing.
    public func open() throws(MeishiError) -> ContactStore {
        try home.ensureExists()
        do { return try ContactStore(path: home.databasePath, logger: Logger(label: "meishi.store")) } catch { throw .store(error) }
    }

    /// The one contact `ref` names (see `ContactStore.resolve`).
    public func resolve(_ ref: String) throws(MeishiError) -> Contact {
        let store = try open()
        do { return try store.resolve(ref) } catch { throw .store(error) }
    }

    /// Deletes the contact `ref` names and returns it.
    public func delete(_ ref: String) throws(MeishiError) -> Contact {
        let store = try open()
        do { return try store.delete(ref) } catch { throw .store(error) }
    }

    /// Stores a verified card, in `store` when the caller already opened it. Refuses the user's own card.
    public func add(_ card: VerifiedCard, trust: Trust, source: String, now: Int64,
                    in store: ContactStore? = nil) throws(MeishiError) -> StoreOutcome {
        if let me = try? IdentityStore(home: home).loadPublic(), me.did == card.payload.senderDID { throw .ownCard }
        let contact = Contact(card: card, trust: trust, source: source, seen: now)
        let target: ContactStore
        if let store { target = store } else { target = try open() }
        do { return try target.store(contact) } catch { throw .store(error) }
    }
}
