import Foundation
import GRDB
import SyncProtocol

/// The drafts (``Draft``): writes kept in the store and never sent, apart from the upload queue.
extension LocalStore {
    static func migrateDrafts(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("3-drafts") { db in
            try db.execute(sql: """
                CREATE TABLE drafts (
                    id TEXT PRIMARY KEY, sequence INTEGER NOT NULL, partition TEXT NOT NULL,
                    operations TEXT NOT NULL, saved_at REAL NOT NULL);
                CREATE INDEX drafts_by_partition ON drafts (partition, sequence);
                """)
        }
    }

    /// Saves a draft, replacing the one with the same id (which keeps its place in the order).
    func saveDraft(_ draft: Draft) throws {
        let text = JSONValue.array(draft.operations.map(\.json)).jsonString
        try database.write { db in
            let sequence = try Int64.fetchOne(db, sql: "SELECT sequence FROM drafts WHERE id = ?", arguments: [draft.id])
                ?? (try Int64.fetchOne(db, sql: "SELECT max(sequence) FROM drafts") ?? 0) + 1
            try db.execute(
                sql: """
                    INSERT INTO drafts (id, sequence, partition, operations, saved_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET partition = excluded.partition, operations = excluded.operations,
                        saved_at = excluded.saved_at
                    """,
                arguments: [draft.id, sequence, draft.partition.description, text, draft.savedAt.timeIntervalSince1970])
        }
    }

    /// The drafts of a partition, or of all partitions, oldest first.
    func drafts(in partition: Partition?) throws -> [Draft] {
        try database.read { db in
            let rows = if let partition {
                try Row.fetchAll(db, sql: "SELECT * FROM drafts WHERE partition = ? ORDER BY sequence", arguments: [partition.description])
            } else {
                try Row.fetchAll(db, sql: "SELECT * FROM drafts ORDER BY sequence")
            }
            return rows.compactMap(Self.draft)
        }
    }

    func draft(_ id: String) throws -> Draft? {
        try database.read { db in try Row.fetchOne(db, sql: "SELECT * FROM drafts WHERE id = ?", arguments: [id]).flatMap(Self.draft) }
    }

    /// Removes a draft; whether there was one.
    @discardableResult
    func removeDraft(_ id: String) throws -> Bool {
        try database.write { db in
            try db.execute(sql: "DELETE FROM drafts WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    /// Moves a draft to the upload queue, in one transaction: published, it is an ordinary
    /// write from here on. Returns the upload's request id; `nil` if there is no such draft.
    func publishDraft(_ id: String) throws -> String? {
        let requestId = UUID().uuidString.lowercased()
        return try database.write { db -> String? in
            guard let row = try Row.fetchOne(db, sql: "SELECT partition, operations FROM drafts WHERE id = ?", arguments: [id]) else { return nil }
            try db.execute(
                sql: "INSERT INTO pending (request_id, partition, operations) VALUES (?, ?, ?)",
                arguments: [requestId, row["partition"] as String, row["operations"] as String])
            try db.execute(sql: "DELETE FROM drafts WHERE id = ?", arguments: [id])
            return requestId
        }
    }

    private static func draft(_ row: Row) -> Draft? {
        guard let partition = try? Partition(row["partition"] as String),
            let list = try? JSONParser(maximumDepth: 512).parse(row["operations"] as String).arrayValue
        else { return nil }
        return Draft(
            id: row["id"], partition: partition, operations: list.compactMap { try? SyncOperation(json: $0) },
            savedAt: Date(timeIntervalSince1970: row["saved_at"]))
    }
}
