import Foundation
import Logging
import MeishiCard
import MeishiStore

/// Opening the store of a home and adding verified cards to it.
public struct ContactsService: Sendable {
    public let home: Home

    public init(home: Home) { self.home = home }

    /// Opens the store, creating the home and the database when missing.
    public func open() throws(MeishiFailure) -> ContactStore {
        try home.ensureExists()
        do { return try ContactStore(path: home.databasePath, logger: Logger(label: "meishi.store")) } catch { throw MeishiFailure(error) }
    }

    /// Stores a verified card, in `store` when the caller already opened it. Refuses the user's own card.
    public func add(_ card: VerifiedCard, trust: Trust, source: String, now: Date,
                    in store: ContactStore? = nil) throws(MeishiFailure) -> StoreOutcome {
        if let me = try? IdentityStore(home: home).loadPublic(), me.did == card.payload.senderDID {
            throw MeishiFailure("that is your own card", status: .dataError)
        }
        let contact = Contact(payload: card.payload, trust: trust, source: source,
                              seen: Int64(now.timeIntervalSince1970), rawPayload: card.raw)
        let target: ContactStore
        if let store { target = store } else { target = try open() }
        do { return try target.store(contact) } catch { throw MeishiFailure(error) }
    }
}
