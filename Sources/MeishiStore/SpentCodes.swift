import Foundation
import GRDB

/// The codes of tables that ran with this store (`meishi exchange --table`): a table's code
/// serves one table (docs/PROTOCOL.md §5.7), so whoever heard it read out cannot join a later
/// table that reuses it. Kept as a digest the caller makes, never the words. Migration `v11-spent-codes`.
extension ContactStore {
    /// When the code of `digest` was first spent here (Unix seconds), nil if it never was.
    public func spentAt(code digest: [UInt8]) throws(StoreError) -> Int64? {
        try read { db in try Int64.fetchOne(db, sql: "SELECT at FROM spent_code WHERE digest = ?", arguments: [Data(digest)]) }
    }

    /// Records the code of `digest` as spent at `at`; a code spent before keeps its first time.
    public func spend(code digest: [UInt8], at: Int64) throws(StoreError) {
        try write { db in try db.execute(sql: "INSERT OR IGNORE INTO spent_code (digest, at) VALUES (?, ?)", arguments: [Data(digest), at]) }
    }
}
