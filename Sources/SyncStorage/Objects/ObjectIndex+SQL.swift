import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol

/// An index's SQL: what ``ObjectStore/createIndexes(_:)`` runs and the searches read.
extension ObjectIndex {
    /// `'{a,b}'`: the path as a PostgreSQL text-array literal (safe: names are checked).
    static func literal(_ path: String) -> String {
        "'{" + path.split(separator: ".").joined(separator: ",") + "}'"
    }

    /// The jsonpath of the values of `field` in the elements of the array at `path`, e.g.
    /// `$."conversations"[*]."id"` (lax mode, as PostgreSQL evaluates it by default): what an
    /// ``arrayElements(collection:path:field:)`` index holds. Safe to splice: names are checked.
    static func elementsPath(path: String, field: String) -> String {
        let steps = path.split(separator: ".").map { "\"\($0)\"" }.joined(separator: ".")
        return "$.\(steps)[*].\"\(field)\""
    }

    /// The SQL expression of those values in `document`, as a JSON array: the search of an
    /// undeclared element index scans the collection with it.
    static func elementsExpression(path: String, field: String, of document: String = "body") -> String {
        "jsonb_path_query_array(\(document), '\(elementsPath(path: path, field: field))')"
    }

    /// The statements that create the index if it is missing and bring its settings up to date.
    ///
    /// A GIN index is kept without its pending list (`fastupdate = off`): the records it
    /// serves are rewritten often (RChat raises unread counts in them), and with the list on
    /// every search reads the whole list of entries added since the last cleanup — 2 ms per
    /// search under `psync-bench ingest`, against 0.46 ms without it (the writes then pay
    /// the index insertions, which cost less in all).
    var statements: [String] {
        switch kind {
        case .field:
            return ["CREATE INDEX IF NOT EXISTS \(name) ON psync_objects ((body #>> \(Self.literal(path)))) WHERE collection = '\(collection)'"]
        case .arrayContains:
            return [
                "CREATE INDEX IF NOT EXISTS \(name) ON psync_objects USING gin ((body #> \(Self.literal(path))) jsonb_path_ops) WITH (fastupdate = off) WHERE collection = '\(collection)'",
                "ALTER INDEX \(name) SET (fastupdate = off)",
            ]
        case .arrayElements(let field):
            return [elementEntriesStatement(field: field)]
        }
    }

    /// Whether the index is an index of `psync_objects` (an element index is rows of
    /// `psync_element_entries` kept by triggers).

    /// The one statement (atomic) that installs an element index when its triggers are
    /// missing: with writes to `psync_objects` held off, it creates the triggers that keep its
    /// entries (migration 0007) and enters the objects stored before. The update trigger fires
    /// only when the indexed values differ, so rewrites that leave them alone write no entry.
    private func elementEntriesStatement(field: String) -> String {
        let elements = Self.elementsPath(path: path, field: field)
        let arguments = "'\(name)', '\(elements)'"
        let values = { (row: String) in Self.elementsExpression(path: path, field: field, of: "\(row).body") }
        // Only when the body is written: a raise of counters beside it (migration 0018) leaves
        // it alone, and the condition would read it twice.
        let update = """
            CREATE TRIGGER \(name)_update AFTER UPDATE OF body ON psync_objects FOR EACH ROW
                WHEN (NEW.collection = '\(collection)' AND \(values("OLD")) IS DISTINCT FROM \(values("NEW")))
                EXECUTE FUNCTION psync_element_entries_sync(\(arguments));
            """
        return """
            DO $ddl$
            BEGIN
                IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'psync_objects'::regclass AND tgname = '\(name)_insert') THEN
                    LOCK TABLE psync_objects IN SHARE ROW EXCLUSIVE MODE;
                    DROP TRIGGER IF EXISTS \(name)_update ON psync_objects;
                    DROP TRIGGER IF EXISTS \(name)_delete ON psync_objects;
                    DELETE FROM psync_element_entries WHERE index_name = '\(name)';
                    CREATE TRIGGER \(name)_insert AFTER INSERT ON psync_objects FOR EACH ROW
                        WHEN (NEW.collection = '\(collection)' AND NEW.body IS NOT NULL)
                        EXECUTE FUNCTION psync_element_entries_sync(\(arguments));
                    \(update)
                    CREATE TRIGGER \(name)_delete AFTER DELETE ON psync_objects FOR EACH ROW
                        WHEN (OLD.collection = '\(collection)' AND OLD.body IS NOT NULL)
                        EXECUTE FUNCTION psync_element_entries_sync(\(arguments));
                    INSERT INTO psync_element_entries (index_name, value, collection, id)
                    SELECT DISTINCT '\(name)', v, o.collection, o.id
                    FROM psync_objects o, jsonb_path_query(o.body, '\(elements)') AS v
                    WHERE o.collection = '\(collection)' AND o.body IS NOT NULL;
                ELSIF EXISTS (
                    SELECT 1 FROM pg_trigger WHERE tgrelid = 'psync_objects'::regclass AND tgname = '\(name)_update'
                      AND cardinality(tgattr::int2[]) = 0
                ) THEN
                    -- Made by a build before counters (migration 0018): it read the body of every
                    -- update, a raise of counters too.
                    LOCK TABLE psync_objects IN SHARE ROW EXCLUSIVE MODE;
                    DROP TRIGGER \(name)_update ON psync_objects;
                    \(update)
                END IF;
            END
            $ddl$
            """
    }
}

extension ObjectStore {
    /// Creates the declared indexes that are missing and drops the ones an earlier version of
    /// the application declared and this one does not (every index named `psync_ix_…` is
    /// one), one server at a time (under the migrator's lock). A declaration that does not
    /// check (``ObjectIndex/check()``) throws before any index is touched, naming it.
    package func createIndexes(_ indexes: [ObjectIndex]) async throws {
        for index in indexes {
            do {
                try index.check()
            } catch {
                throw SyncError(error.code, "the index on \(index.collection) at \(index.path) is not valid: \(error.message)")
            }
        }
        try await client.withOpenConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Migrator.lockKey))", logger: logger)
            do {
                for index in indexes {
                    for statement in index.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                }
                let declared = Set(indexes.filter(\.isTableIndex).map(\.name))
                var undeclared: [String] = []
                let rows = try await connection.query(
                    """
                    SELECT c.relname::text FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                    WHERE i.indrelid = 'psync_objects'::regclass AND starts_with(c.relname, \(ObjectIndex.namePrefix))
                    """, logger: logger)
                for try await name in rows.decode(String.self) where !declared.contains(name) { undeclared.append(name) }
                for name in undeclared {
                    logger.notice("dropping an index no longer declared", metadata: ["index": "\(name)"])
                    try await connection.query(PostgresQuery(unsafeSQL: "DROP INDEX IF EXISTS \"\(name)\""), logger: logger)
                }
                try await dropUndeclaredElementIndexes(keeping: Set(indexes.filter { !$0.isTableIndex }.map(\.name)), on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Migrator.lockKey))", logger: logger)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Migrator.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// Drops the triggers of the element indexes not in `declared`, and the entries of every
    /// element index not in it.
    private func dropUndeclaredElementIndexes(keeping declared: Set<String>, on connection: PostgresConnection) async throws {
        var undeclared: Set<String> = []
        let rows = try await connection.query(
            """
            SELECT tgname::text FROM pg_trigger
            WHERE tgrelid = 'psync_objects'::regclass AND NOT tgisinternal AND starts_with(tgname, \(ObjectIndex.namePrefix))
            """, logger: logger)
        for try await trigger in rows.decode(String.self) {
            guard let suffix = ObjectIndex.triggerSuffixes.first(where: { trigger.hasSuffix($0) }) else { continue }
            let name = String(trigger.dropLast(suffix.count))
            if !declared.contains(name) { undeclared.insert(name) }
        }
        for name in undeclared.sorted() {
            logger.notice("dropping an element index no longer declared", metadata: ["index": "\(name)"])
            for suffix in ObjectIndex.triggerSuffixes {
                try await connection.query(PostgresQuery(unsafeSQL: "DROP TRIGGER IF EXISTS \"\(name)\(suffix)\" ON psync_objects"), logger: logger)
            }
        }
        try await connection.query("DELETE FROM psync_element_entries WHERE NOT index_name = ANY(\(Array(declared)))", logger: logger)
        setElementIndexes(declared)
    }
}
