import Foundation
import GRDB

extension ContactStore {
    /// Writes a consistent copy of the whole store (contacts, common friends, notes) to `path`,
    /// which must not exist, with SQLite's `VACUUM INTO`: it reads in one transaction, so other
    /// processes may go on writing meanwhile and the copy holds the store as it was at one
    /// moment. The copy is compact (no free pages: deleted rows are not in it) and has no
    /// write-ahead log.
    public func snapshot(to path: String) throws(StoreError) {
        do {
            try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [path]) }
        } catch {
            throw .unavailable(Self.describe(error))
        }
    }
}
